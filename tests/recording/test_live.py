"""Recording real connections: `connect(record=)` and `serve(record=)` over aioquic on loopback."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import aqueduct
from aqueduct import Delivery
from aqueduct.api.connection import link_of
from aqueduct.api.halves.wiring import open_handle
from aqueduct.core.app import MessagesAcked
from aqueduct.quic.certs import DevCerts
from aqueduct.recording import read_events

GUARD = 20.0


async def test_both_sides_record_what_they_send_take_and_learn(certs: DevCerts, tmp_path: Path) -> None:
    server_dir, client_dir = tmp_path / "server", tmp_path / "client"
    served = asyncio.Event()

    async def handle(conn: aqueduct.Connection) -> None:
        with contextlib.suppress(aqueduct.ConnectionLost):
            await serve_requests(conn)

    async def serve_requests(conn: aqueduct.Connection) -> None:
        async for req in conn.entrypoint:
            count = 0
            async for _ in req["data"]:
                count += 1
            async with req["reply"] as reply:
                await reply.send({"count": count})
            served.set()

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, record=server_dir) as server:
        acceptor = asyncio.ensure_future(_accept(server, handle))
        host, port = server.address
        async with aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca, record=client_dir) as conn:
            data_tx, data_rx = aqueduct.channel()
            reply_tx, reply_rx = aqueduct.channel()
            await conn.entrypoint.send({"data": data_rx, "reply": reply_tx})
            all_acked = _spy_acks(conn, open_handle(data_tx), 20)
            for i in range(20):
                await data_tx.send(b"x" * i)
            await data_tx.send("dgram", mode=Delivery.UNRELIABLE)
            await data_tx.finish()
            answer = await asyncio.wait_for(reply_rx.recv(), GUARD)
            await asyncio.wait_for(all_acked.wait(), GUARD)
            await asyncio.wait_for(served.wait(), GUARD)
        acceptor.cancel()
    assert answer["count"] in (20, 21)  # the datagram may be lost

    client = read_events(client_dir)
    server_events = read_events(server_dir)
    opened = [e for e in client if e["kind"] == "connection_opened"]
    assert len(opened) == 1 and opened[0]["detail"].startswith("client 127.0.0.1:")
    (conn_id,) = {e["connection"] for e in client}
    sent = [e for e in client if e["kind"] == "message_sent"]
    request = sent[0]
    assert len(request["attachments"]) == 2
    data_channel = request["attachments"][0]
    created = {e["channel"]: e for e in client if e["kind"] == "channel_created"}
    assert set(request["attachments"]) <= set(created)
    assert created[data_channel]["parent"] == request["channel"] and created[data_channel]["direction"] == "out"
    data_sent = [e for e in sent if e["channel"] == data_channel]
    assert [(e["delivery"], e["number"]) for e in data_sent] == [("ordered", i) for i in range(20)] + [
        ("unreliable", 0)
    ]
    acked = {e["number"] for e in client if e["kind"] == "acked" and e["channel"] == data_channel
             and e["delivery"] == "ordered"}  # fmt: skip
    assert acked == set(range(20))
    assert all(e["latency_ns"] >= 0 for e in client if e["kind"] in ("acked", "nacked"))
    ends = [e for e in client if e["kind"] == "channel_finished" and e["channel"] == data_channel]
    assert ends and ends[0]["direction"] == "out"
    reply_channel = request["attachments"][1]
    assert [e["kind"] for e in client if e["channel"] == reply_channel and e["kind"].startswith("message")] == [
        "message_received"
    ]
    assert any(e["kind"] == "connection_stats" and e["rtt_us"] for e in client)
    assert {e["connection"] for e in client} == {conn_id}

    received = [(e["channel"], e["number"], e["length"]) for e in server_events
                if e["kind"] == "message_received" and e["delivery"] == "reliable"]  # fmt: skip
    assert received == [(e["channel"], e["number"], e["length"]) for e in sent
                        if e["delivery"] == "ordered" and e["channel"] != reply_channel]  # fmt: skip
    assert any(e["kind"] == "connection_opened" and e["detail"].startswith("server") for e in server_events)


def _spy_acks(conn: aqueduct.Connection, handle: int | None, count: int) -> asyncio.Event:
    """An event set once the engine has reported reliable acks of messages 0..count-1 on `handle`."""
    done, seen = asyncio.Event(), set()
    assert link_of(conn).recording is not None
    forward = link_of(conn).recording.on_events

    def spy(events: list[Any]) -> None:
        forward(events)
        for ev in events:
            if isinstance(ev, MessagesAcked) and ev.sender == handle and ev.reliable:
                seen.update(range(ev.first, ev.stop))
        if seen >= set(range(count)):
            done.set()

    link_of(conn).recording.on_events = spy  # type: ignore[method-assign]
    return done


async def _accept(server: aqueduct.Server, handle: Any) -> None:
    tasks = set()
    async for conn in server:
        tasks.add(asyncio.ensure_future(handle(conn)))
