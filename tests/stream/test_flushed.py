"""`StreamWriter.flushed()` tells the truth (issue 26 item 13): it returns on the ACK that leaves nothing
unacknowledged (not at the idle timeout), and raises the connection's error when the connection ended with
bytes unacknowledged (a reset used to empty the send buffer, which read as "all acknowledged")."""

from __future__ import annotations

import asyncio

import pytest

from aeron_compat.marlin.aio import StreamEndpoint
from aeron_compat.marlin.connection import AllAcked
from aeron_compat.marlin.errors import StreamError, StreamReset
from aeron_compat.marlin.limits import MS, StreamConfig
from tests.stream.helpers import Pair, payload
from tests.stream.simnet import SimNet


def test_the_ack_that_settles_the_last_packet_is_an_event() -> None:
    net = SimNet()
    pair = Pair(net, StreamConfig())
    net.run_until(pair.established)
    c = pair.client
    sid = c.open_stream()
    c.send(sid, payload(50_000), fin=True)
    seen: list[object] = []

    def settled() -> bool:
        pair.b.events()
        seen.extend(ev for _, ev in pair.a.events())
        return c.all_sent()

    net.run_until(settled)
    assert [ev for ev in seen if isinstance(ev, AllAcked)] == [AllAcked()]


def test_a_connection_reset_with_bytes_unacked_is_not_all_sent() -> None:
    net = SimNet()
    pair = Pair(net, StreamConfig())
    net.run_until(pair.established)
    c = pair.client
    sid = c.open_stream()
    c.send(sid, payload(50_000))
    c.poll(net.now)
    c.close()
    assert not c.all_sent()


LONG_IDLE = StreamConfig(idle_timeout_ns=3_000 * MS)


def test_flushed_returns_while_the_connection_is_still_open() -> None:
    """The old flushed() waited for a Writable the last ACK never sends: it returned only when the idle timeout
    (3 s here) closed the connection."""
    async def main() -> None:
        server = await StreamEndpoint.listen("127.0.0.1", 0, config=LONG_IDLE)
        client = await StreamEndpoint.bind(config=LONG_IDLE)
        try:
            conn = await asyncio.wait_for(client.dial(server.address), 30)
            sconn = await asyncio.wait_for(server.accept(), 30)
            _, writer = conn.open_stream()
            writer.write(payload(200_000))
            writer.write_eof()
            await asyncio.wait_for(writer.flushed(), 30)
            assert not conn.closed.is_set() and not sconn.closed.is_set()
            assert conn.engine.all_sent()
        finally:
            client.close()
            server.close()

    asyncio.run(main())


def test_flushed_raises_when_the_peer_resets_before_acknowledging() -> None:
    async def main() -> None:
        server = await StreamEndpoint.listen("127.0.0.1", 0)
        client = await StreamEndpoint.bind()
        try:
            conn = await asyncio.wait_for(client.dial(server.address), 30)
            sconn = await asyncio.wait_for(server.accept(), 30)
            _, writer = conn.open_stream()
            writer.write(payload(3_000_000))  # more than one window: cannot all be acked before the reset
            sconn.close()  # the listener resets the connection
            with pytest.raises(StreamReset):
                await asyncio.wait_for(writer.flushed(), 30)
        finally:
            client.close()
            server.close()

    asyncio.run(main())


def test_flushed_raises_after_a_local_close() -> None:
    async def main() -> None:
        server = await StreamEndpoint.listen("127.0.0.1", 0)
        client = await StreamEndpoint.bind()
        try:
            conn = await asyncio.wait_for(client.dial(server.address), 30)
            _, writer = conn.open_stream()
            writer.write(payload(3_000_000))
            conn.close()
            with pytest.raises(StreamError):
                await asyncio.wait_for(writer.flushed(), 30)
        finally:
            client.close()
            server.close()

    asyncio.run(main())
