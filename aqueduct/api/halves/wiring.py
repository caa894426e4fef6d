"""Wiring: what only the library does with halves, as functions (never on the classes a user holds).

The connection (link.py), the codec, prefetching, typing (validation.py) and the services wire halves through
these: pairing two new halves on a pipe, binding a half to a network channel, typing it, handing it to the
peer inside a message (`bind_moved`) and ending the halves of a dropped message. Each change of a half's
binding is one move of the binding table (bindings.py `move`, which checks BINDING_MOVES).

Moving halves. When a message on a connection carries a half, the engine creates a new channel and hands
back a handle for the half that stays on this side (`bind_moved`):

- a local pair (`channel()`): the stay-at-home half is bound to the handle; a receiver keeps what its pipe
  already queued, and a sender's queued, unread messages are sent on the network channel (a message sent with
  confirm=True keeps its future: its fate is now the network's); a pair whose other half is gone is dropped
  or ended as its pipe says;
- a half that is already networked (bound to another channel): a fresh half takes over its channel
  (`hand_on`), a relay task forwards between the old channel and the new one (`relay`), and the moved half
  becomes unusable.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import weakref
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from ...core.app import AttachKind, Delivery
from ...errors import ChannelClosed, ChannelError, ChannelFinished, EndReason, Outcome, ReceiverDropped
from ..validation import TypeSpec, register_half_types
from .base import LagNotice, Link, _Pipe
from .bindings import MOVED, Local, Networked, _Half, discard_halves, move
from .oneshot import Half, OneshotReceiver, OneshotSender
from .receiver import Receiver
from .sender import Sender

__all__ = [
    "adopt_type", "attach_kind", "bind_moved", "discard_halves", "end_halves", "ended_here",
    "half_link", "networked_half", "networked_receiver", "networked_sender", "open_handle", "pair", "relay",
    "send_notice", "spec_of", "type_as",
]


# ---- making and typing ----
def pair(tx: Sender[Any], rx: Receiver[Any], spec: TypeSpec | None, capacity: int) -> None:
    """Wire a new Sender and Receiver to one new pipe (both share one binding: a binding never changes in
    place), typed by `spec`."""
    pipe = _Pipe(capacity)
    local = Local(pipe)
    tx._spec = rx._spec = spec
    move(tx, local)
    move(rx, local)
    pipe.sender, pipe.receiver = weakref.ref(tx), weakref.ref(rx)


def bind(half: Half, link: Link, handle: int) -> None:
    """From now on `half` talks to network channel `handle` of `link`: a sender with every clone of it; a
    receiver after what its pipe already holds."""
    binding = half._binding
    if isinstance(half, Sender):
        net = Networked(link, handle)
        group = half._group
        if group is None:
            move(half, net)
            return
        for member in group.members():
            member._follow(net)
        return
    pipe = binding.pipe if type(binding) is Local else None
    move(half, Networked(link, handle, pipe))
    if pipe is not None:
        pipe.wake()


def networked_half(link: Link, handle: int, *, is_sender: bool, oneshot: bool = False) -> Half:
    """A half bound to a network channel (an attachment we received); untyped until a message type types it.

    A receiver that arrived in a message may be a broadcast subscription: it takes lag notices as Lagged."""
    half: Half
    if is_sender:
        half = OneshotSender() if oneshot else Sender()
    else:
        half = OneshotReceiver() if oneshot else Receiver()
        half._lags = True
    bind(half, link, handle)
    return half


def networked_sender(link: Link, handle: int, spec: TypeSpec | None = None) -> Sender[Any]:
    """A Sender bound to a network channel, typed by `spec`."""
    tx: Sender[Any] = Sender()
    tx._spec = spec
    bind(tx, link, handle)
    return tx


def networked_receiver(link: Link, handle: int, spec: TypeSpec | None = None) -> Receiver[Any]:
    """A Receiver bound to a network channel, typed by `spec`."""
    rx: Receiver[Any] = Receiver()
    rx._spec = spec
    bind(rx, link, handle)
    return rx


def spec_of(half: _Half) -> TypeSpec | None:
    """The message type's spec of `half` (validation.py), or None: untyped."""
    return half._spec


def type_as(half: _Half, spec: TypeSpec | None) -> None:
    """Give `half` its message type (a declared attachment, a service's call sender)."""
    half._spec = spec


def adopt_type(half: _Half, spec: TypeSpec | None) -> None:
    """`half` (untyped) takes the message type a typed message declares for it, and so does its local partner if
    it is untyped too (the reply receiver of a request learns the reply type)."""
    half._spec = spec
    binding = half._binding
    if type(binding) is Local:
        ref = binding.pipe.receiver if half._IS_SENDER else binding.pipe.sender
        partner = ref() if ref is not None else None
        if partner is not None and partner._spec is None:
            partner._spec = spec


register_half_types(Sender, Receiver, OneshotSender, OneshotReceiver, spec_of=spec_of, type_as=type_as,
                    adopt=adopt_type)


# ---- what the library asks of a half ----
def half_link(half: _Half) -> Link | None:
    """The connection `half` talks (or talked, if ended here) over; None if local or moved."""
    return half._binding.was.link


def ended_here(half: _Half) -> str | None:
    """How `half` ended on this side ("finished", "moved into a message", ...), None while it is open."""
    return half._binding.done


def open_handle(half: _Half) -> int | None:
    """The engine handle of `half` if it is open on a network channel, else None."""
    binding = half._binding
    return binding.handle if type(binding) is Networked else None


async def send_notice(tx: Sender[Any], notice: LagNotice) -> None:
    """Send an in-band notice (not a T: no type check) in order with the messages (broadcast's Lagged)."""
    sent = tx._binding.send(tx, notice, notice, Delivery.ORDERED, False)
    if sent is not None:
        await sent


_KINDS = {Sender: AttachKind.SENDER, Receiver: AttachKind.RECEIVER, OneshotSender: AttachKind.ONESHOT_SENDER,
          OneshotReceiver: AttachKind.ONESHOT_RECEIVER}


def attach_kind(half: Half) -> AttachKind:
    """The engine attachment for handing `half` to the peer (ChannelClosed if it may not travel)."""
    done = half._binding.done
    if done is not None:
        raise ChannelClosed(f"cannot send a half that is {done}")
    if isinstance(half, Sender) and half._group is not None and half._group.open > 1:
        raise ChannelClosed("a cloned sender cannot travel in a message while its clones are open")
    return _KINDS[type(half)]


def end_halves(halves: Iterable[Half]) -> None:
    """End each of these halves (the ones a dropped message carried): senders cancel, receivers close."""
    for half in halves:
        half._discard()


# ---- moving a half into a message ----
def bind_moved(link: Link, half: Half, created: int, spawn: Callable[[Coroutine[Any, Any, None]], None]) -> None:
    """`half` went to the peer in a message on `link`; wire what stays here to the engine handle `created`."""
    binding = half._binding
    if type(binding) is Local:
        pipe = binding.pipe
        if isinstance(half, Sender):
            rx = pipe.receiver() if pipe.receiver is not None else None
            move(half, MOVED)
            if rx is None or rx._binding.done is not None or pipe.receiver_gone:
                link.drop_receiver(created)
            else:
                bind(rx, link, created)
            return
        tx = pipe.sender() if pipe.sender is not None else None
        queued, ended = list(pipe.items), pipe.ended
        pipe.items.clear()
        move(half, MOVED)
        pipe.wake()
        for value, delivery, number in queued:
            local = pipe.confirms.pop(number, None)
            if local is None:
                link.send_now(created, value, delivery, force=True)
            else:  # a confirmed message queued before its channel moved: its fate is the network's
                remote = link.send_now(created, value, delivery, confirm=True, force=True)
                assert remote is not None
                remote.add_done_callback(functools.partial(_pass_on, local))
        if tx is not None and tx._binding.done is None:
            bind(tx, link, created)
        elif ended is EndReason.FINISHED:
            link.finish(created)
        else:
            link.cancel(created)
        return
    if isinstance(half, Sender):
        fresh_tx: Sender[Any] = Sender()
        _hand_on(half, fresh_tx)
        spawn(relay(networked_receiver(link, created), fresh_tx))
    else:
        fresh_rx: Receiver[Any] = Receiver()
        _hand_on(half, fresh_rx)
        spawn(relay(fresh_rx, networked_sender(link, created)))


def _hand_on(half: Half, fresh: Half) -> None:
    """`half`, bound to a channel, goes into a message: `fresh` takes over its binding (a receiver's prefetched
    messages, its pipe's leftovers and its channel) to relay it; `half` is moved."""
    binding = half._binding
    move(half, MOVED)
    if type(binding) is Networked:  # (a half made by hand and never wired has nothing to hand on)
        move(fresh, binding)
        if binding.pipe is not None:
            binding.pipe.wake()


def _pass_on(to: asyncio.Future[Outcome], done: asyncio.Future[Outcome]) -> None:
    if not to.done():
        to.set_result(done.result())


async def relay(src: Receiver[Any], dst: Sender[Any]) -> None:
    """Forward a channel we hold both ends of (a networked half sent on): messages, then finish or cancel."""
    try:
        while True:
            try:
                msg = await src.recv_message()
            except ChannelFinished:
                await dst.finish()
                return
            await dst.send(msg.value, mode=msg.delivery)
    except ReceiverDropped:
        src.close()
    except ChannelError:
        with contextlib.suppress(ChannelError):
            dst.cancel()
        src.close()
