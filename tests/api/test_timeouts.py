"""Blocking calls give up cleanly: `recv(timeout=)`, `send(timeout=)` and both under `asyncio.timeout`.

Over a real connection each case checks what a caller relies on after a timeout: the channel still works,
and a send that timed out sent nothing (the receiver sees exactly the sends that returned). A send blocked
by flow control is made by a reader that takes nothing until told to, with windows small enough that a few
messages fill them. (The reply channel of a timed-out `request` is test_typed_channels' concern.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest

import aqueduct
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running

SMALL = aqueduct.TransportSettings(stream_window=8192, connection_window=16384, send_buffer=8192)
PAD = b"\x07" * 1024
MOST = 10_000
"""Bound on the sends that fill the windows (far more than they hold)."""

async def _under_asyncio_timeout(aw: Awaitable[Any]) -> Any:
    async with asyncio.timeout(0.05):
        return await aw


KINDS = ["timeout=", "asyncio.timeout"]
EXPECTED: dict[str, type[BaseException]] = {"timeout=": aqueduct.Timeout, "asyncio.timeout": TimeoutError}


@pytest.mark.parametrize("kind", KINDS)
async def test_recv_times_out_on_an_empty_channel_and_still_receives_later(certs: DevCerts, kind: str) -> None:
    go = asyncio.Event()

    async def server(conn: aqueduct.Connection) -> None:
        req = await conn.entrypoint.recv()
        await go.wait()
        async with req["to"] as tx:
            await tx.send("later")

    async with running(certs, server) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"to": tx})
        with pytest.raises(EXPECTED[kind]) as raised:
            if kind == "timeout=":
                await rx.recv(timeout=0.05)
            else:
                await _under_asyncio_timeout(rx.recv())
        assert isinstance(raised.value, TimeoutError)  # aqueduct.Timeout is a TimeoutError too
        if kind == "timeout=":
            assert isinstance(raised.value, aqueduct.AqueductError)
        go.set()
        assert await guard(rx.recv(timeout=20.0 if kind == "timeout=" else None)) == "later"
        with pytest.raises(aqueduct.ChannelFinished):
            await guard(rx.recv())
        assert not conn.is_closed


@pytest.mark.parametrize("mode", ["ordered", "unordered"])
@pytest.mark.parametrize("kind", KINDS)
async def test_a_send_that_times_out_under_backpressure_sent_nothing(certs: DevCerts, kind: str, mode: str) -> None:
    release = asyncio.Event()
    seen: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()

    async def server(conn: aqueduct.Connection) -> None:
        req = await conn.entrypoint.recv()
        await release.wait()  # takes nothing until then: the windows fill, the sender blocks
        seen.set_result([msg["i"] async for msg in req["data"]])

    async with running(certs, server, settings=SMALL) as (url, _), aqueduct.connect(
        url, ca=certs.ca, settings=SMALL
    ) as conn:
        tx, rx = aqueduct.channel(mode)
        await conn.entrypoint.send({"data": rx})
        sent: list[int] = []
        for i in range(MOST):
            try:
                if kind == "timeout=":
                    await tx.send({"i": i, "pad": PAD}, timeout=0.05)
                else:
                    await _under_asyncio_timeout(tx.send({"i": i, "pad": PAD}))
            except TimeoutError as exc:
                assert isinstance(exc, EXPECTED[kind])
                break
            sent.append(i)
        else:
            pytest.fail(f"{MOST} sends never blocked")
        assert sent, "the very first send blocked"
        assert not conn.is_closed
        release.set()
        last = len(sent) + 1  # (the number the timed-out send had is skipped: it was never sent)
        await guard(tx.send({"i": last, "pad": PAD}))
        await tx.finish()
        got = await guard(seen)
        want = [*sent, last]
        assert (got if mode == "ordered" else sorted(got)) == want
