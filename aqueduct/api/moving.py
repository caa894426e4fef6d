"""Moving halves: what stays here when a half travels inside a message.

When a message on a connection carries a half, the engine creates a new
channel and hands back a handle for the half that stays on this side
(`bind_moved`):

- a local pair (`channel()`): the stay-at-home half is bound to the handle;
  a receiver keeps what its pipe already queued, and a sender's queued,
  unread messages are sent on the network channel (a message sent with
  confirm=True keeps its future: its fate is now the network's); a pair
  whose other half is gone is dropped or ended as its pipe says;
- a half that is already networked (bound to another channel): a fresh
  half takes over its channel (`hand_on`), a relay task forwards between
  the old channel and the new one (`relay`), and the moved half becomes
  unusable.

Each of these is a move of the halves' port table (halves/ports.py),
made by the half's own intention methods (`mark_moved`, `bind`,
`hand_on`): this module reads ports and never writes one.

It needs of the connection only what a networked half does (halves.Link)
and a way to spawn the relay, so it does not depend on link.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from ..errors import ChannelError, ChannelFinished, EndReason, Outcome, ReceiverDropped
from .halves import Half, Link, LocalPort, Receiver, Sender, networked_receiver, networked_sender


class MovingLink(Link, Protocol):
    """What moving a half needs of its connection: a networked half's Link, and sends that may not wait."""

    def send_nowait_confirmed(
        self, handle: int, obj: Any, delivery: Any, *, force: bool = False
    ) -> asyncio.Future[Outcome]: ...


def bind_moved(link: MovingLink, half: Half, created: int, spawn: Callable[[Coroutine[Any, Any, None]], None]) -> None:
    """`half` went to the peer in a message on `link`; wire what stays here to the engine handle `created`."""
    port = half.port
    if isinstance(half, Sender):
        if type(port) is LocalPort:
            pipe = port.pipe
            rx = pipe.receiver() if pipe.receiver is not None else None
            half.mark_moved()
            if rx is None or rx.port.done is not None or pipe.receiver_gone:
                link.drop_receiver(created)
            else:
                rx.bind(link, created)
        else:
            inner = half.hand_on()
            spawn(relay(networked_receiver(link, created), inner))
    else:
        if type(port) is LocalPort:
            pipe = port.pipe
            tx = pipe.sender() if pipe.sender is not None else None
            queued, ended = list(pipe.items), pipe.ended
            pipe.items.clear()
            half.mark_moved()
            for msg in queued:
                local = pipe.confirms.pop(msg.number, None)
                if local is None:
                    link.send_nowait(created, msg.value, msg.delivery, force=True)
                else:  # a confirmed message queued before its channel moved: its fate is the network's
                    remote = link.send_nowait_confirmed(created, msg.value, msg.delivery, force=True)
                    remote.add_done_callback(functools.partial(_pass_on, local))
            if tx is not None and tx.port.done is None:
                tx.bind(link, created)
            elif ended is EndReason.FINISHED:
                link.finish(created)
            else:
                link.cancel(created)
        else:
            spawn(relay(half.hand_on(), networked_sender(link, created)))


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
