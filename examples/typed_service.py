"""A typed quote desk: request/response, a typed feed attached to a message, a broadcast of trades whose
subscriber travels in a message, confirmed delivery, and an untyped peer whose malformed message is refused
while its connection goes on.

Run: `python examples/typed_service.py` (server and clients in one process, on loopback).
`python examples/typed_service.py serve --cert C --key K [--port P] [--metrics-port M]` runs only the desk,
printing `listening on HOST:PORT` (and `metrics on URL`) first, as `aqueduct serve` does: the red-team suite
(tests/reliability/test_redteam_payloads.py) attacks it that way. The desk catches ValidationError, as README's
handler does, and that is all a hostile peer's payload can raise from `recv` (SECURITY.md, "Payloads")."""

from __future__ import annotations

import argparse
import asyncio
import sys

import msgspec
from _common import running_server

import aqueduct
from aqueduct import Connection, OneshotSender, Receiver, Sender


class Quote(msgspec.Struct):
    sym: str
    bid: float
    ask: float


class Tick(msgspec.Struct):
    sym: str
    seq: int
    px: float


class Trade(msgspec.Struct):
    sym: str
    qty: int


class Request(msgspec.Struct):
    """What the desk's entrypoint takes: ask for a quote (reply), a feed of ticks, and/or the trade tape."""

    sym: str
    reply: OneshotSender[Quote] | None = None
    feed: Sender[Tick] | None = None
    ticks: int = 0
    tape: OneshotSender[Receiver[Trade]] | None = None


TAPE: aqueduct.Broadcast[Trade] | None = None  # the trade tape, made in main() (it needs the running loop)


async def desk(conn: Connection[Receiver[Request]]) -> None:
    """The server side: every message is a Request, or refused with a ValidationError naming the field."""
    while True:
        try:
            req = await conn.entrypoint.recv()
        except aqueduct.ValidationError as exc:
            print(f"desk: refused a message: at {exc.path} expected {exc.expected}, got {exc.received}")
            continue
        except (aqueduct.ChannelFinished, aqueduct.ConnectionLost):
            return
        try:
            await answer(req)
        except aqueduct.ChannelError as exc:  # the asker closed its reply channel first: the desk goes on
            print(f"desk: not answered: {exc}")


async def answer(req: Request) -> None:
    if req.reply is not None:
        await req.reply.send(Quote(req.sym, bid=99.5, ask=100.5))
    if req.feed is not None:
        async with req.feed as feed:  # finished when the block ends
            for seq in range(req.ticks):
                await feed.send(Tick(req.sym, seq, 100.0 + seq / 10))
    if req.tape is not None and TAPE is not None:
        await req.tape.send(TAPE.subscribe())  # a subscriber's Receiver travels back in the reply


async def demo() -> None:
    global TAPE
    TAPE = aqueduct.Broadcast(Trade)
    async with running_server(desk, entrypoint=Request) as (url, certs):
        async with aqueduct.connect(url, ca=certs.ca, entrypoint=Request) as conn:
            quote = await aqueduct.request(conn.entrypoint, lambda reply: Request("ACME", reply=reply), timeout=5.0)
            print(f"quote: {quote.sym} {quote.bid}/{quote.ask}")

            feed_tx, feed_rx = aqueduct.channel(Tick)  # the sender travels inside the request
            await conn.entrypoint.send(Request("ACME", feed=feed_tx, ticks=3))
            async for tick in feed_rx:
                print(f"tick: {tick.sym} #{tick.seq} {tick.px:.2f}")

            try:
                await conn.entrypoint.send({"sym": "ACME", "ticks": "many"})  # type: ignore[call-overload]
            except aqueduct.ValidationError as exc:
                print(f"client: not sent: {exc}")

            outcome = await conn.entrypoint.send(Request("ACME"), confirm=True)
            print(f"confirmed request: {outcome.value}")

            tape = await aqueduct.request(conn.entrypoint, lambda r: Request("ACME", tape=r),
                                          reply_type=Receiver[Trade])  # (the reply half is not `reply`)
            for qty in (100, 250):
                await TAPE.send(Trade("ACME", qty))
            print(f"tape: {(await tape.recv()).qty}, {(await tape.recv()).qty}")

        async with aqueduct.connect(url, ca=certs.ca) as untyped:  # a peer that knows no types
            await untyped.entrypoint.send({"sym": 42})
            reply_tx, reply_rx = aqueduct.oneshot()
            await untyped.entrypoint.send({"sym": "ACME", "reply": reply_tx})
            print(f"untyped peer, still served: {await reply_rx.recv()}")


async def main() -> None:
    await (serve_desk(sys.argv[2:]) if sys.argv[1:2] == ["serve"] else demo())


async def serve_desk(argv: list[str]) -> None:
    """Only the desk, until killed (for attacking it from another process)."""
    global TAPE
    parser = argparse.ArgumentParser(prog="typed_service.py serve")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--metrics-port", type=int)
    args = parser.parse_args(argv)
    TAPE = aqueduct.Broadcast(Trade)
    metrics = None if args.metrics_port is None else ("127.0.0.1", args.metrics_port)
    async with aqueduct.serve("127.0.0.1", args.port, cert=args.cert, key=args.key, entrypoint=Request,
                              metrics=metrics) as server:
        print(f"listening on {server.address[0]}:{server.address[1]}", flush=True)
        if server.metrics_address is not None:
            print(f"metrics on http://{server.metrics_address[0]}:{server.metrics_address[1]}/metrics", flush=True)
        desks: set[asyncio.Task[None]] = set()
        async for conn in server:
            task = asyncio.ensure_future(desk(conn))
            desks.add(task)
            task.add_done_callback(desks.discard)


if __name__ == "__main__":
    aqueduct.run(main())  # Ctrl-C ends it with one line
