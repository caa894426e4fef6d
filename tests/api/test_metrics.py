"""Prometheus metrics of a live server, scraped over HTTP as Prometheus would."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

import aqueduct
from aqueduct.core.config import EngineConfig
from aqueduct.metrics import FAMILIES
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running


async def scrape(address: tuple[str, int]) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """GET the endpoint; family name -> {sorted labels: value} (counters keep their `_total` sample names)."""
    reader, writer = await asyncio.open_connection(*address)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    raw = await guard(reader.read())
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"text/plain" in head
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out.setdefault(family.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def value(metrics: dict[str, Any], family: str, **labels: str) -> float:
    return float(metrics[family][tuple(sorted(labels.items()))])


async def _serve(conn: aqueduct.Connection) -> None:
    async for request in conn.entrypoint:
        if "reply" in request:
            async with request["reply"] as reply:
                await reply.send({"echo": request["text"]})
        if "lane" in request:
            with contextlib.suppress(aqueduct.ChannelCancelled):
                async for _ in request["lane"]:
                    pass


async def test_scrape_shows_traffic_by_mode_acks_ends_and_handshakes(certs: DevCerts) -> None:
    async with running(certs, _serve, metrics=("127.0.0.1", 0)) as (url, server):
        assert server.metrics_address is not None
        async with aqueduct.connect(url, ca=certs.ca) as conn:
            assert value(await scrape(server.metrics_address), "aqueduct_connections_open") == 1
            for mode in ("ordered", "unordered"):
                reply_tx, reply_rx = aqueduct.channel()
                await conn.entrypoint.send({"text": mode, "reply": reply_tx}, mode=mode)
                assert (await guard(reply_rx.recv()))["echo"] == mode
            lane_tx, lane_rx = aqueduct.channel()
            await conn.entrypoint.send({"lane": lane_rx})
            for i in range(5):
                await lane_tx.send(i, mode="unreliable")
            lane_tx.cancel()
            during = await scrape(server.metrics_address)
            (server_side,) = server.connections
            sent = conn.stats.by_mode()  # the client's own counts, per mode
            assert [sent[m][0] for m in ("ordered", "unordered", "unreliable")] == [2, 1, 5]
        await guard(server_side.wait_closed())
        after = await scrape(server.metrics_address)
    assert set(FAMILIES) <= set(during), set(FAMILIES) - set(during)
    assert value(during, "aqueduct_handshakes", kind="1rtt") == 1
    assert value(during, "aqueduct_connections_accepted") == 1
    # (the engine reports every stream message as ordered on the receiving side; decision OPS-8)
    streamed = [value(during, "aqueduct_messages_received", mode=m) for m in ("ordered", "unordered")]
    assert sum(streamed) == 3  # two requests and the lane's
    assert value(during, "aqueduct_messages_sent", mode="ordered") == 2  # both replies (sent ordered)
    assert value(during, "aqueduct_bytes_sent", mode="ordered") > 0
    assert value(during, "aqueduct_bytes_received", mode="ordered") > 0
    assert value(during, "aqueduct_channels_open", half="receiver") >= 1  # the entrypoint at least
    # after the client left, its counts stay in the totals and nothing is open
    assert value(after, "aqueduct_connections_open") == 0
    assert value(after, "aqueduct_messages_received", mode="ordered") + value(
        after, "aqueduct_messages_received", mode="unordered") == 3
    assert value(after, "aqueduct_messages_received", mode="unreliable") <= 5
    assert value(after, "aqueduct_channel_ends", half="sender", reason="finished") >= 2  # the two replies
    assert value(after, "aqueduct_acked_messages", reliable="true") >= 2  # the client acked both replies


async def test_unreliable_cancel_and_refused_are_counted(certs: DevCerts) -> None:
    got: asyncio.Queue[int] = asyncio.Queue()

    async def serve_lane(conn: aqueduct.Connection) -> None:
        async for request in conn.entrypoint:
            try:
                async for n in request["lane"]:
                    got.put_nowait(n)
            except aqueduct.ChannelCancelled:
                got.put_nowait(-1)

    async with running(certs, serve_lane, metrics=("127.0.0.1", 0)) as (url, server):
        async with aqueduct.connect(url, ca=certs.ca) as conn:
            lane_tx, lane_rx = aqueduct.channel()
            await conn.entrypoint.send({"lane": lane_rx})
            await lane_tx.send(1, mode="unreliable")
            assert await guard(got.get()) == 1
            lane_tx.cancel()
            assert await guard(got.get()) == -1
            metrics = await scrape(server.metrics_address)  # type: ignore[arg-type]
            assert value(metrics, "aqueduct_messages_received", mode="unreliable") == 1
            assert value(metrics, "aqueduct_bytes_received", mode="unreliable") > 0
            assert value(metrics, "aqueduct_channel_ends", half="receiver", reason="cancelled") == 1
            await guard(server.drain(grace=0.0))
        refused = aqueduct.connect(url, ca=certs.ca, connect_timeout=0.2)
        try:
            await refused
        except aqueduct.ConnectError:
            pass
        metrics = await scrape(server.metrics_address)  # type: ignore[arg-type]
        assert value(metrics, "aqueduct_connections_refused") >= 1


async def test_limit_closes_are_counted(certs: DevCerts) -> None:
    async with running(certs, _serve, metrics=("127.0.0.1", 0),
                       engine_config=EngineConfig(max_frame_size=512)) as (url, server):
        async with aqueduct.connect(url, ca=certs.ca) as conn:
            await conn.entrypoint.send({"text": "x" * 4096})
            closed = await guard(conn.wait_closed())
        assert closed.error_code == aqueduct.CloseCode.LIMIT_EXCEEDED
        metrics = await scrape(server.metrics_address)  # type: ignore[arg-type]
        assert value(metrics, "aqueduct_limit_closes") == 1


async def test_cli_serve_exposes_metrics(certs: DevCerts) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aqueduct", "serve", "--echo", "--port", "0", "--metrics-port", "0",
        "--cert", str(certs.cert), "--key", str(certs.key), stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        listening = (await guard(proc.stdout.readline())).decode().strip().removeprefix("listening on ")
        endpoint = (await guard(proc.stdout.readline())).decode().strip()
        match = re.fullmatch(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", endpoint)
        assert match, endpoint
        async with aqueduct.connect(f"aqueduct://{listening}", ca=certs.ca, codec=aqueduct.RawCodec()) as conn:
            reply_tx, reply_rx = aqueduct.channel()
            await conn.entrypoint.send(aqueduct.RawMessage(b"ping", [reply_tx]))
            assert (await guard(reply_rx.recv())).data == b"ping"
            metrics = await scrape(("127.0.0.1", int(match.group(1))))
        assert value(metrics, "aqueduct_messages_received", mode="ordered") == 1
        assert value(metrics, "aqueduct_messages_sent", mode="ordered") == 1
    finally:
        proc.terminate()
        await proc.wait()
