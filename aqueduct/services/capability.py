"""Capabilities: a service object inside a message travels as the Sender of a channel its calls come back on.

Theory of operation. Registered with the typed channels (api/validation.py) at import, so a service may
stand wherever a message type may have a field (and so as any argument or result of a method). Sending: a
field declared as an interface accepts an implementation (or a stub) of it; when the message is really
encoded, the codec asks `to_half`, which opens a local channel of the interface's call type, serves its
receiver with the object (dispatch.py) and hands the Sender over: the connection moves it, and the
receiver left here is bound to the network channel, so calls come back over the same connection.
Receiving: the Sender that arrives becomes a stub of the declared interface (stub.py).

Lifetime (Cap'n Proto's release on the last reference): the only reference to the channel's far end is
the stub; when it is dropped the Sender is collected, the channel is cancelled, and the dispatcher here ends
with it, releasing the implementation (by reference counting alone: nothing of a call that ended, its
context included, holds a stub it was passed; dispatch.py). A stub passed on is served like an
implementation: its dispatcher forwards each call through the stub, so the stub stays usable and may go to
another connection (calls then pass through this process while both connections live); one whose
connection is already gone cannot be passed (ConnectionLost, naming it).
"""

from __future__ import annotations

from typing import Any

from ..api.connection import link_of
from ..api.halves import Sender, channel
from ..api.halves.wiring import ended_here, spec_of, type_as
from ..api.validation import Carried, register_capabilities, spec_for
from ..errors import ConnectionLost
from .dispatch import serve_calls, spawn
from .interface import Service, interface_of
from .stub import is_stub, make_stub, sender_of


class ServiceCapabilities:
    """The typed channels' view of services (api/validation.py's `Capabilities`)."""

    def declares(self, tp: Any) -> bool:
        return isinstance(tp, type) and issubclass(tp, Service)

    def is_capability(self, obj: Any) -> bool:
        return isinstance(obj, Service)

    def check(self, tp: Any, obj: Any) -> Any:
        value = obj.obj if type(obj) is Carried else obj
        if isinstance(value, tp):
            return value
        raise TypeError(f"Expected `{tp.__qualname__}` (a service), got `{type(value).__name__}`")

    def arrive(self, tp: Any, half: Any) -> Any:
        if isinstance(half, tp):  # (a local channel carries the object itself)
            return half
        iface = interface_of(tp)
        if type(half) is not Sender:
            raise TypeError(f"Expected `{iface.name}` (a service's call sender), got `{type(half).__name__}`")
        if spec_of(half) is None:
            type_as(half, spec_for(iface.call_type))
        return make_stub(iface, half)

    def to_half(self, obj: Any) -> Sender[Any]:
        iface = interface_of(type(obj))
        if is_stub(obj):
            target = sender_of(obj)
            link = link_of(target)
            if ended_here(target) is not None or (link is not None and link.is_closed):
                raise ConnectionLost(f"cannot pass this {iface.name} stub on: the connection it calls over is gone")
        tx, rx = channel(iface.call_type)
        spawn(serve_calls(rx, obj, iface))
        return tx

    def message_type(self, tp: Any) -> Any:
        return interface_of(tp).call_type


register_capabilities(ServiceCapabilities())
