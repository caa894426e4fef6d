"""Sender and Receiver: the two halves of a channel, local or networked.

A pair from `channel()` starts as an in-process channel: both halves share a pipe (a bounded queue plus end
flags), so code runs without a network. When a half is sent inside a message on a connection, the codec
hands it to the connection, which asks the engine for a new channel and binds the half that stayed here to
the engine handle it got back; the moved half becomes unusable. Where a half talks is its binding
(bindings.py: Unwired, Local, Networked, Closed, Moved), and the binding carries the behaviour: a Sender
checks a value and asks its binding to send it, a Receiver asks its binding for the next message. A
binding changes only by a move of one transition table. A receiver keeps what was already queued in its
pipe and returns it first; a sender's queued-but-unread messages are forwarded onto the network channel. A
half that is already networked (bound to another channel) is forwarded by a relay task instead. A
networked receiver reads from a small deque its connection fills a batch at a time (ConnectionLink.fill).

Typed channels: `channel(T)` gives both halves the spec of T (validation.py). A typed Sender checks each
value before it is queued or sent (ValidationError, nothing sent) and hands the codec its builtins; a
typed Receiver converts what arrives from the network into T as its connection takes it (prefetch.py; a
local pipe already holds T objects). A received message that does not fit is dropped (refused: not acked
unless the receiver reads on past it, decision API-34) and, by the receiver's `on_invalid` policy, raised
from `recv` ("raise", the default), skipped ("drop"), or raised after closing the receiver ("close").
Oneshot halves carry one message: the channel ID's oneshot bit on the wire, a capacity-one pipe locally.

Dropping a half (garbage collection) ends it like the engine does: an unfinished sender cancels, a
receiver closes. That is `__del__` on the slotted halves, guarded by its binding (`drops`: false once a half
is moved, or a local half ended by hand): no finalizer object or weak method per half. A networked half
tells its link, which defers the engine call (a collection may run anywhere); a local half tells its pipe
at once.

The public classes carry only what an application calls; what the library does with halves (binding,
typing, moving, ending a dropped message's halves) is functions of wiring.py, and the halves' own state is
package-private (`_binding`, `_spec`: tests/architecture/test_private_access.py).

Rooms: base.py (message and mode types, the pipe, the Link protocol), bindings.py (the bindings, their
table and `_Half`), sender.py, receiver.py, oneshot.py, wiring.py (the library's wiring), make.py
(`channel`, `oneshot`); each imports only the ones before it.
"""

from __future__ import annotations

from .base import DEFAULT_LOCAL_CAPACITY, LagNotice, Link, Message, ModeLike, OnInvalid, Prefetched, as_delivery, within
from .make import channel, oneshot
from .oneshot import Half, OneshotReceiver, OneshotSender
from .receiver import Receiver
from .sender import Sender

__all__ = [
    "DEFAULT_LOCAL_CAPACITY", "Half", "LagNotice", "Link", "Message", "ModeLike", "OnInvalid", "OneshotReceiver",
    "OneshotSender", "Prefetched", "Receiver", "Sender", "as_delivery", "channel", "oneshot", "within",
]
