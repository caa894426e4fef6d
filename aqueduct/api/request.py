"""Request/response over channels: `reply = await aqueduct.request(target, build, timeout=2.0)`.

Theory of operation. A request is a message that carries the sending half of a fresh oneshot channel;
the answer comes back on it. `request` makes the oneshot pair, lets `build(reply_sender)` make the
request (so the reply half sits wherever the message type wants it), sends it on `target`, and awaits
the one reply. The reply pair is untyped when made (typed when `reply_type=` names it): checking the
request against `target`'s type gives the reply sender the type its field declares and its local partner
with it, so the answer is validated and converted like any typed message. For mypy the result is the type
of the request's `reply` field (the `Replies` protocol), or `reply_type`. However `request` ends (answer,
timeout, deadline, cancellation, error), the reply receiver is closed: the engine forgets the channel once
the peer hears of it, the responder's late `send` raises ReceiverDropped, and nothing is left behind
(`state_sizes()` idle).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, overload

from ..errors import ChannelClosed, ChannelFinished, Timeout
from .halves import OneshotSender, Sender, oneshot, within
from .oneof import OneOf

Req = TypeVar("Req")
Rep = TypeVar("Rep")


class Replies(Protocol[Rep]):
    """A request whose `reply` field is the oneshot its answer comes back on (or an optional one): what lets
    mypy infer `request`'s result from the request the lambda builds (a dataclass, `msgspec.Struct` or
    pydantic model)."""

    @property
    def reply(self) -> OneshotSender[Rep] | None: ...


@overload
async def request(
    target: Sender[Req], build: Callable[[OneshotSender[Rep]], Replies[Rep]], *, timeout: float | None = ...,
    deadline: float | None = ...,
) -> Rep: ...
@overload
async def request(
    target: Sender[Req], build: Callable[[OneshotSender[Rep]], Req], *, reply_type: type[Rep] | OneOf[Rep],
    timeout: float | None = ..., deadline: float | None = ...,
) -> Rep: ...
async def request(
    target: Sender[Any],
    build: Callable[[OneshotSender[Any]], Any],
    *,
    reply_type: Any = None,
    timeout: float | None = None,
    deadline: float | None = None,
) -> Any:
    """Send `build(reply)` on `target` and return what the responder sends on `reply`.

    The result's type is the request's `reply` field's (`reply: OneshotSender[Quote]` gives a Quote), so
    `quote = await aqueduct.request(conn.entrypoint, lambda reply: Ask("X", reply))` needs no annotation. A
    request that carries its reply half otherwise (another field name, a TypedDict) names the reply's type:
    `reply_type=Quote`, which the reply is also checked against.
    `timeout` (seconds from now) or `deadline` (the event loop's clock, `loop.time()`) bound the whole
    exchange: Timeout when it passes. The reply channel is closed however this ends."""
    if deadline is not None:
        left = deadline - asyncio.get_running_loop().time()
        timeout = left if timeout is None else min(timeout, left)
        if timeout <= 0:
            raise Timeout("request: the deadline has passed")
    reply_tx, reply_rx = oneshot(reply_type) if reply_type is not None else oneshot()
    try:
        return await within(timeout, _exchange(target, build(reply_tx), reply_rx), "request")
    finally:
        reply_rx.close()


async def _exchange(target: Sender[Any], message: Any, reply_rx: Any) -> Any:
    await target.send(message)
    try:
        return await reply_rx.recv()
    except ChannelFinished:
        raise ChannelClosed("request: the responder ended the reply channel without replying") from None
