"""Making halves: the `channel()` and `oneshot()` pairs an application asks for (the library's own halves,
bound to network channels, are made in wiring.py)."""

from __future__ import annotations

from typing import Any, overload

from ...core.app import Delivery
from ..oneof import OneOf, type_of
from ..validation import spec_for
from .base import DEFAULT_LOCAL_CAPACITY, ModeLike, OnInvalid, T
from .oneshot import OneshotReceiver, OneshotSender
from .receiver import Receiver
from .sender import Sender
from .wiring import pair


@overload
def channel(
    mode: ModeLike = ..., /, *, capacity: int = ..., on_invalid: OnInvalid = ...
) -> tuple[Sender[Any], Receiver[Any]]: ...
@overload
def channel(
    *, mode: ModeLike, capacity: int = ..., on_invalid: OnInvalid = ...
) -> tuple[Sender[Any], Receiver[Any]]: ...
@overload
def channel(
    message_type: type[T] | OneOf[T], mode: ModeLike = ..., capacity: int = ..., *, on_invalid: OnInvalid = ...
) -> tuple[Sender[T], Receiver[T]]: ...
def channel(
    message_type: Any = None,
    mode: ModeLike = Delivery.ORDERED,
    capacity: int = DEFAULT_LOCAL_CAPACITY,
    *,
    on_invalid: OnInvalid = "raise",
) -> tuple[Sender[Any], Receiver[Any]]:
    """A new channel as (Sender, Receiver); in-process until a half is sent inside a message.

    `channel(T)`: every message is a T, checked before sending and converted on arrival (`channel(OneOf(A, B))`:
    an A or a B); `channel()`: any value. (`channel("unordered")` still names a mode: a string or Delivery
    first is the mode.)"""
    if isinstance(message_type, str | Delivery):
        message_type, mode = None, message_type
    tx: Sender[Any] = Sender(mode=mode)
    rx: Receiver[Any] = Receiver()
    _pair(tx, rx, message_type, capacity)
    rx.on_invalid = on_invalid
    return tx, rx


@overload
def oneshot() -> tuple[OneshotSender[Any], OneshotReceiver[Any]]: ...
@overload
def oneshot(message_type: type[T] | OneOf[T]) -> tuple[OneshotSender[T], OneshotReceiver[T]]: ...
def oneshot(message_type: Any = None) -> tuple[OneshotSender[Any], OneshotReceiver[Any]]:
    """A oneshot channel: one message, then finished (the spec's oneshot channel ID bit on the wire)."""
    tx: OneshotSender[Any] = OneshotSender()
    rx: OneshotReceiver[Any] = OneshotReceiver()
    _pair(tx, rx, message_type, 1)
    return tx, rx


def _pair(tx: Sender[Any], rx: Receiver[Any], message_type: Any, capacity: int) -> None:
    pair(tx, rx, spec_for(type_of(message_type)) if message_type is not None else None, capacity)
