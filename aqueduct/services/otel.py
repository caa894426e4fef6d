"""Tracing of service calls with OpenTelemetry (the `otel` extra): `interceptors=[aqueduct.services.otel.tracing()]`.

Theory of operation. One interceptor serves both sides. A caller's opens a CLIENT span named
`<Interface>/<method>` and injects the W3C trace context (`traceparent`, `tracestate`) into the call's
metadata, which travels with the call; the server's extracts it and opens a SERVER span that is the
client span's child, so one trace covers the call on both sides. A failed call records the exception and
sets the span's status to ERROR.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from .context import CallInfo, Interceptor, Proceed


def tracing(tracer_provider: TracerProvider | None = None) -> Interceptor:
    """An interceptor that traces every call it sees (give it to `connect` and to `serve`)."""
    tracer = trace.get_tracer("aqueduct.services", tracer_provider=tracer_provider)

    async def traced(call: CallInfo, proceed: Proceed) -> Any:
        name = f"{call.service}/{call.method}"
        attributes = {"rpc.system": "aqueduct", "rpc.service": call.service, "rpc.method": call.method}
        if call.side == "client":
            with tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes) as span:
                propagate.inject(call.metadata)
                return await _run(span, proceed)
        parent = propagate.extract(call.metadata)
        with tracer.start_as_current_span(name, context=parent, kind=SpanKind.SERVER, attributes=attributes) as span:
            return await _run(span, proceed)

    return traced


async def _run(span: trace.Span, proceed: Proceed) -> Any:
    try:
        return await proceed()
    except Exception as exc:
        span.set_status(Status(StatusCode.ERROR, str(exc)))
        raise
