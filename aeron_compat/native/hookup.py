"""How `Aeron.add_publication` / `add_subscription` hand `transport=native` channels to this package.

Theory: the native classes have the same method and property names as
aeron_compat's Publication / Subscription / Image (offer, poll, images,
position, is_connected, close, ...) but are not subclasses, since they carry
no Aqueduct log; they are typed as the class they stand in for so ported code
type-checks. Not provided natively: concurrent publications sharing a
session (every publication is exclusive).
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from aeron_compat.native.channel import is_native
from aeron_compat.native.publication import NativePublication
from aeron_compat.native.subscription import NativeSubscription

T = TypeVar("T")

__all__ = ["is_native", "native_publication", "native_subscription"]


def native_publication(channel: str, stream_id: int, resources: list[Any], kind: type[T]) -> T:
    """A `NativePublication` on the default native driver, registered in `resources`."""
    pub = NativePublication(channel, stream_id)
    resources.append(pub)
    return cast(T, pub)


def native_subscription(channel: str, stream_id: int, resources: list[Any], kind: type[T], on_available: Any,
                        on_unavailable: Any) -> T:
    """A `NativeSubscription` on the default native driver, registered in `resources`."""
    sub = NativeSubscription(channel, stream_id, on_available_image=on_available, on_unavailable_image=on_unavailable)
    resources.append(sub)
    return cast(T, sub)
