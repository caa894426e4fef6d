"""The server side of Aqueduct over WebTransport, driven by a Python WebTransport client (wt_client.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import aqueduct
from aqueduct.quic.webtransport import WebTransportProtocol
from aqueduct.quic.webtransport_cert import BrowserCert

from .wt_client import open_session, raw_session

pytestmark = pytest.mark.asyncio


async def test_a_session_and_a_quic_client_reach_the_same_server(browser_cert: BrowserCert) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=True) as server:
        async def handle() -> list[tuple[str, Any]]:
            seen = []
            async for conn in server:
                msg = await conn.entrypoint.recv()
                seen.append((conn.transport, msg))
                if len(seen) == 2:
                    return seen
            return seen

        task = asyncio.create_task(handle())
        browser = await open_session(server.address, browser_cert.hex)
        await browser.entrypoint.send({"from": "webtransport"})
        quic = await aqueduct.connect(f"aqueduct://127.0.0.1:{server.address[1]}", fingerprint=browser_cert.hex)
        await quic.entrypoint.send({"from": "quic"})
        seen = await asyncio.wait_for(task, 10)
        assert sorted(seen) == [("quic", {"from": "quic"}), ("webtransport", {"from": "webtransport"})]
        await browser.close()
        await quic.close()


async def test_channels_travel_inside_messages_both_ways_over_a_session(browser_cert: BrowserCert) -> None:
    """A receiver sent by the client gets a stream back; a sender sent by the client carries the server's reply;
    a cancel by the client reaches the server as ChannelCancelled (a stream reset, its code mapped both ways)."""
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=True) as server:
        async def handle() -> None:
            conn = await server.accept()
            async for msg in conn.entrypoint:
                if msg["op"] == "stream":
                    async with msg["to"] as tx:
                        for i in range(50):
                            await tx.send(i)
                elif msg["op"] == "reply":
                    await msg["to"].send(msg["x"] * 2)
                    await msg["to"].finish()
                elif msg["op"] == "cancelled":
                    with pytest.raises(aqueduct.ChannelCancelled):
                        await msg["from"].recv()
                        await msg["from"].recv()
                    await msg["ack"].send("saw the cancel")

        task = asyncio.create_task(handle())
        conn = await open_session(server.address, browser_cert.hex)
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"op": "stream", "to": tx})
        assert [n async for n in rx] == list(range(50))
        reply_tx, reply_rx = aqueduct.channel()
        await conn.entrypoint.send({"op": "reply", "to": reply_tx, "x": 21})
        assert await reply_rx.recv() == 42
        data_tx, data_rx = aqueduct.channel()
        ack_tx, ack_rx = aqueduct.channel()
        await conn.entrypoint.send({"op": "cancelled", "from": data_rx, "ack": ack_tx})
        await data_tx.send("one")
        data_tx.cancel()
        assert await asyncio.wait_for(ack_rx.recv(), 10) == "saw the cancel"
        await conn.close()
        await asyncio.wait_for(task, 10)


async def test_unreliable_messages_travel_in_session_datagrams(browser_cert: BrowserCert) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=True) as server:
        conn = await open_session(server.address, browser_cert.hex)
        served = await server.accept()
        tx, rx = aqueduct.channel(mode=aqueduct.Delivery.UNRELIABLE)
        await conn.entrypoint.send(rx)
        got = await served.entrypoint.recv()
        await tx.send(b"x" * 100)
        assert await asyncio.wait_for(got.recv(), 10) == b"x" * 100
        assert served.stats.unreliable_received >= 1 and conn.stats.unreliable_sent == 1
        await conn.close()


@pytest.mark.parametrize(("options", "path", "origin", "status"), [
    ({"origins": ("https://app.example",)}, "/aqueduct", "https://evil.example", 403),
    ({"origins": ("https://app.example",)}, "/aqueduct", None, 403),
    ({}, "/elsewhere", "https://any.example", 404),
    ({"path": "/ws"}, "/aqueduct", "https://any.example", 404),
], ids=["wrong-origin", "no-origin", "wrong-path", "other-path"])
async def test_a_session_outside_the_allow_list_is_refused(
    browser_cert: BrowserCert, options: dict[str, Any], path: str, origin: str | None, status: int,
) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=aqueduct.WebTransportOptions(**options)) as server:
        session = await raw_session(server.address, browser_cert.hex, path=path, origin=origin)
        assert session.status.result() == status
        assert session.engine is None
        assert server.webtransport is not None
        assert server.webtransport.refused == 1 and server.webtransport.live == 0
        session.close_connection(0, "done")


async def test_sessions_are_capped_per_server_and_per_connection(browser_cert: BrowserCert) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=aqueduct.WebTransportOptions(max_sessions=1)) as server:
        first = await open_session(server.address, browser_cert.hex)
        second = await raw_session(server.address, browser_cert.hex)
        assert second.status.result() == 429  # over the server's cap
        assert server.webtransport is not None and server.webtransport.live == 1
        # a second CONNECT on the first session's own connection: one session per connection
        from aqueduct.api.connection import link_of

        protocol = link_of(first).protocol
        assert isinstance(protocol, type(second))
        protocol.status = asyncio.get_running_loop().create_future()
        protocol.send_connect(f"127.0.0.1:{server.address[1]}", "/aqueduct", "https://x.example")
        assert await asyncio.wait_for(protocol.status, 10) == 429
        assert server.webtransport.refused == 2
        await first.close()
        second.close_connection(0, "done")


async def test_bad_bytes_from_a_session_close_it_with_the_code_a_quic_peer_gets(browser_cert: BrowserCert) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=True) as server:
        session = await raw_session(server.address, browser_cert.hex, headers=[])
        session.send_raw(b"\x00garbage", uni=False)  # the first bidi stream: the connection control stream
        await asyncio.wait_for(session.terminated, 10)
        assert session.closed_with is not None
        assert session.closed_with[0] in (aqueduct.CloseCode.PROTOCOL_VIOLATION, aqueduct.CloseCode.FRAME_ENCODING)
        assert server.webtransport is not None and server.webtransport.live == 0


async def test_an_endless_capsule_closes_the_session(browser_cert: BrowserCert) -> None:
    """The CONNECT stream's capsules are bounded (MAX_CAPSULE): a peer cannot make the server hold an endless one."""
    from aioquic.buffer import encode_uint_var

    from aqueduct.quic.webtransport_wire import MAX_CAPSULE

    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=True) as server:
        conn = await open_session(server.address, browser_cert.hex)
        from aqueduct.api.connection import link_of

        protocol = link_of(conn).protocol
        assert protocol.h3 is not None and protocol.session_id is not None
        protocol.h3.send_data(protocol.session_id, encode_uint_var(0x1234) + encode_uint_var(MAX_CAPSULE + 1), False)
        protocol.transmit()
        closed = await asyncio.wait_for(conn.wait_closed(), 10)
        assert closed.error_code == aqueduct.CloseCode.PROTOCOL_VIOLATION
        assert server.webtransport is not None and server.webtransport.live == 0


async def test_the_stream_tables_forget_finished_streams(browser_cert: BrowserCert) -> None:
    """Each unordered message is a stream of its own; the adapter's tables (and aioquic's H3 table) stay bounded."""
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=True) as server:
        conn = await open_session(server.address, browser_cert.hex)
        served = await server.accept()
        tx, rx = aqueduct.channel(mode=aqueduct.Delivery.UNORDERED)
        await conn.entrypoint.send(rx)
        got = await served.entrypoint.recv()
        from aqueduct.api.connection import link_of

        protocol = link_of(served).protocol
        assert isinstance(protocol, WebTransportProtocol)
        peak = 0
        for i in range(600):
            await tx.send(i)
            if i % 200 == 199:  # (streams swept before their messages are taken: their credit comes later)
                for _ in range(200):
                    await got.recv()
                sizes = protocol.state_sizes()
                peak = max(peak, sizes["webtransport_streams"], sizes["h3_streams"])
        assert served.stats.messages_received >= 600
        assert peak < 300
        # every byte the application took was credited back, those of streams already forgotten too (a plain QUIC
        # connection is 450 bytes short here as well: the entrypoint's own)
        received, allowed = protocol.quic.receive_window()
        assert allowed - received >= aqueduct.TransportSettings().connection_window - 1024
        await conn.close()


async def test_the_engine_limits_hold_for_a_session(browser_cert: BrowserCert) -> None:
    """The same EngineConfig bounds a browser session: too many connection headers close it with LIMIT_EXCEEDED."""
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key, webtransport=True,
                              engine_config=aqueduct.EngineConfig(max_headers=4)) as server:
        session = await raw_session(server.address, browser_cert.hex,
                                    headers=[(f"h{i}", b"x") for i in range(10)] + [("codec", b"cbor")])
        session.flush()  # the client engine's Version + ConnectionControl
        await asyncio.wait_for(session.terminated, 10)
        assert session.closed_with is not None and session.closed_with[0] == aqueduct.CloseCode.LIMIT_EXCEEDED


async def test_an_h3_connection_without_a_session_is_closed_at_the_start_up_deadline(
    browser_cert: BrowserCert,
) -> None:
    settings = aqueduct.TransportSettings(handshake_timeout=0.5)
    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key, webtransport=True,
                              settings=settings) as server:
        session = await raw_session(server.address, browser_cert.hex, path="/nowhere")  # refused: no engine
        assert session.status.result() == 404
        ended = await asyncio.wait_for(session.terminated, 10)
        assert ended.error_code == aqueduct.CloseCode.LIMIT_EXCEEDED
        assert server.admission.start_timeouts == 1 and server.connections == set()


async def test_credit_of_a_stream_forgotten_before_its_messages_were_taken_comes_back(
    browser_cert: BrowserCert,
) -> None:
    """A finished channel's stream leaves aioquic (and is swept from the tables) while its messages still wait in the
    receiver; when they are taken, their bytes return to the connection's window all the same (as every byte the
    engine never saw: stream headers, the CONNECT, HTTP/3's own streams)."""
    from aqueduct.api.connection import link_of

    async with aqueduct.serve("127.0.0.1", 0, cert=browser_cert.cert, key=browser_cert.key,
                              webtransport=True) as server:
        conn = await open_session(server.address, browser_cert.hex)
        served = await server.accept()
        held_tx, held_rx = aqueduct.channel()
        many_tx, many_rx = aqueduct.channel(mode=aqueduct.Delivery.UNORDERED)
        await conn.entrypoint.send({"held": held_rx, "many": many_rx})
        got = await served.entrypoint.recv()
        for i in range(300):  # streams enough to sweep the tables while `held` waits
            await many_tx.send(i)
            if i % 10 == 0:
                await held_tx.send(bytes(2000))
        await held_tx.finish()
        for _ in range(300):
            await got["many"].recv()
        assert len([m async for m in got["held"]]) == 30
        for _ in range(2):  # (a round trip: the credit of what was taken has been handed to aioquic)
            await conn.entrypoint.send("sync")
            assert await served.entrypoint.recv() == "sync"
        protocol = link_of(served).protocol
        assert isinstance(protocol, WebTransportProtocol) and protocol.state_sizes()["webtransport_streams"] < 200
        received, allowed = protocol.quic.receive_window()
        assert allowed - received >= aqueduct.TransportSettings().connection_window - 64
        await conn.close()
