"""Interceptors over real connections: each side's see the method, the arguments, the peer's identity (mutual
TLS) and the per-call metadata; the server's may refuse a call (the caller gets RemoteError, the connection
goes on); with the otel extra the W3C trace context travels and both sides make spans of one trace."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import aqueduct
from aqueduct.quic.certs import DevCerts, make_client_cert
from tests.api.conftest import guard

from .conftest import served


@pytest.fixture
def alice(certs: DevCerts) -> tuple[Path, Path]:
    return make_client_cert(certs.ca.parent, "alice")


async def test_interceptors_see_method_args_identity_and_metadata_and_may_refuse(
        certs: DevCerts, alice: tuple[Path, Path]) -> None:
    seen: list[tuple[str, str, dict[str, Any], dict[str, str], str | None]] = []

    async def server_side(call: aqueduct.CallInfo, proceed: Any) -> Any:
        identity = call.peer_identity
        seen.append((call.side, call.method, dict(call.args), dict(call.metadata),
                     identity.subject if identity is not None else None))
        if call.args.get("a") == 13:
            raise PermissionError("13 is refused")
        return await proceed()

    async def client_side(call: aqueduct.CallInfo, proceed: Any) -> Any:
        call.metadata["tenant"] = "blue"  # (travels with the call)
        seen.append((call.side, call.method, dict(call.args), dict(call.metadata), None))
        return await proceed()

    server_kw = {"interceptors": [server_side], "client_ca": certs.ca}
    async with served(certs, server_kw=server_kw, interceptors=[client_side], cert=alice[0], key=alice[1]) as (
            _, conn, _server):
        with aqueduct.call_options(metadata={"request-id": "r1"}):
            assert await guard(conn.service.add(1, 2)) == 3
        assert seen == [("client", "add", {"a": 1, "b": 2}, {"request-id": "r1", "tenant": "blue"}, None),
                        ("server", "add", {"a": 1, "b": 2}, {"request-id": "r1", "tenant": "blue"}, "CN=alice")]
        with pytest.raises(aqueduct.RemoteError) as refused:
            await guard(conn.service.add(13, 1))
        assert (refused.value.type_name, refused.value.method) == ("PermissionError", "add")
        assert await guard(conn.service.add(2, 2)) == 4


async def test_trace_context_travels_and_both_sides_make_spans(certs: DevCerts) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from aqueduct.services.otel import tracing

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    traced = tracing(provider)
    async with served(certs, server_kw={"interceptors": [traced]}, interceptors=[traced]) as (_, conn, _server):
        assert await guard(conn.service.add(1, 2)) == 3
        with pytest.raises(aqueduct.RemoteError):
            await guard(conn.service.fail("x"))

        async def both() -> None:
            while len(exporter.get_finished_spans()) < 4:
                await asyncio.sleep(0.01)  # (a poll of a condition: the server's span ends after its reply)

        await guard(both())
    spans = exporter.get_finished_spans()
    by_kind = {(s.name, s.kind): s for s in spans}
    client, server = by_kind["Calculator/add", SpanKind.CLIENT], by_kind["Calculator/add", SpanKind.SERVER]
    assert server.context.trace_id == client.context.trace_id
    assert server.parent is not None and server.parent.span_id == client.context.span_id
    assert not by_kind["Calculator/fail", SpanKind.SERVER].status.is_ok
    assert not by_kind["Calculator/fail", SpanKind.CLIENT].status.is_ok
