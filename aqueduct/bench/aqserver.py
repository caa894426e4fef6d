"""The Aqueduct side of the bench servers: the commands of protocol.py served on each connection's entrypoint.

Each message on the entrypoint is a command with halves attached (protocol.pack): a command that carries
a stream of messages (SINK, ECHO, CHANNELS, HOLD, the typed ones) runs as a task of its own; PING and
REQUEST answer at once on the oneshot they carry, in the accepting loop (as a request handler that does
not block would). peer.py serves these beside the other transports; peers/aqueduct.py serves them alone
in a process of their own, so the peer rows' server CPU and memory are Aqueduct's alone.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from typing import Any

import aqueduct
from aqueduct.errors import AqueductError

from ..api.halves.wiring import adopt_type
from ..api.validation import spec_for
from .protocol import CHANNELS, ECHO, HOLD, PING, REQUEST, TYPED_CHANNELS, TYPED_SINK, encode_count, pack, unpack
from .tally import Tally
from .typed import BenchCarrier, BenchOrder


async def _command(codec: str, cmd: bytes, halves: list[Any], tally: Tally | None) -> None:
    rx, tx = halves
    if cmd in (TYPED_SINK, TYPED_CHANNELS):  # a typed service's receiver: every message converted to its type
        adopt_type(rx, spec_for(BenchOrder if cmd == TYPED_SINK else BenchCarrier))
    n = 0
    held: list[Any] = []
    if cmd == HOLD:
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
    try:
        async for obj in rx:
            n += 1
            if cmd == ECHO:
                if tally is not None:  # (counted before its echo: an echo sends no count at its end)
                    tally.messages += 1
                await tx.send(pack(codec, unpack(codec, obj)[0]))
            elif cmd == CHANNELS:
                (inner,) = unpack(codec, obj)[1]
                await inner.recv()
                inner.close()
            elif cmd == TYPED_CHANNELS:
                await obj.inbox.recv()
                obj.inbox.close()
            elif cmd == HOLD:
                held.extend(unpack(codec, obj)[1])
    except AqueductError:
        pass
    if tally is not None and cmd != ECHO:
        tally.messages += n  # before the count is replied
    if cmd == HOLD:
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        await tx.send(pack(codec, encode_count(n) + encode_count(max(0, traced))))
    elif cmd != ECHO:
        await tx.send(pack(codec, encode_count(n)))
    await tx.finish()
    held.clear()


async def _answer(codec: str, data: bytes, reply: Any) -> None:
    body = data[1:] if data[:1] == REQUEST else b"p"
    try:
        await reply.send(pack(codec, body))
        if not isinstance(reply, aqueduct.OneshotSender):  # (PING's reply may be a plain channel)
            await reply.finish()
    except AqueductError:
        pass  # the caller gave up


async def _connection(conn: aqueduct.Connection[Any], codec: str, tasks: set[asyncio.Task[None]],
                      tally: Tally | None) -> None:
    if tally is not None:
        tally.connected(conn)
    try:
        async for obj in conn.entrypoint:
            cmd, halves = unpack(codec, obj)
            if tally is not None:
                tally.channels += len(halves)
                tally.commands[cmd[:1]] += 1
            if cmd == PING or cmd[:1] == REQUEST:
                await _answer(codec, cmd, halves[0])
                if tally is not None and cmd != PING:
                    tally.calls += 1
                continue
            task = asyncio.ensure_future(_command(codec, cmd, halves, tally))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    except AqueductError:
        pass


async def accept(server: aqueduct.Server[Any], codec: str, tally: Tally | None = None) -> None:
    """Serve the bench commands on every connection `server` accepts (until cancelled), counting in `tally`
    (tally.py) when given."""
    tasks: set[asyncio.Task[None]] = set()
    async for conn in server:
        task = asyncio.ensure_future(_connection(conn, codec, tasks, tally))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
