"""What the rest of aqueduct may know of an aioquic connection beyond aioquic's public API.

aioquic keeps the figures a user or a benchmark wants (smoothed and minimum
RTT, the peer's address, congestion window, bytes in flight, lost packets,
a stream's unacknowledged bytes, the datagrams waiting to be sent) in
private attributes. This module is where they are read: one of the doors
to aioquic's private state, beside the classes that subclass aioquic
(aioquic_connection.py, aioquic_protocol.py, aioquic_server.py,
aioquic_tls.py; ARCHITECTURE.md lists them and says why), so an aioquic
upgrade that moves them breaks there and nowhere else: api/, cli/,
recording/, bench/, aeron_compat/ and the rest of the adapter (writes.py's
backpressure) call these functions, and
tests/architecture/test_aioquic_stays_in_quic.py fails if any module
outside the doors names an aioquic private.

Two kinds of read: the adapter's figures (`smoothed_rtt`, `min_rtt`,
`rtt_initialized`, `peer_address`) are read directly (aioquic 1.2+ has
them all); the recording's figures (`QuicStatsProbe`, `original_destination_cid`)
are guarded, so a changed aioquic yields None, never an error. aioquic does
not count lost packets, so the probe wraps the one connection's
`_on_packets_lost` to count them (the class is untouched).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Mapping
from typing import Any, cast

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic.connection import QuicConnection


# ---- the adapter's figures ----
def smoothed_rtt(quic: QuicConnection) -> float:
    """aioquic's smoothed RTT estimate in seconds."""
    return float(quic._loss._rtt_smoothed)


def min_rtt(quic: QuicConnection) -> float:
    """The smallest RTT sample aioquic has seen, in seconds (inf before the first)."""
    return float(quic._loss._rtt_min)


def rtt_initialized(quic: QuicConnection) -> bool:
    """Whether aioquic has taken an RTT sample yet."""
    return bool(quic._loss._rtt_initialized)


def peer_address(quic: QuicConnection) -> tuple[str, int] | None:
    """The peer's address on the current network path ((host, port), IPv4-mapped prefix removed), if known."""
    paths = quic._network_paths
    if not paths:
        return None
    host, port = paths[0].addr[:2]
    return str(host).removeprefix("::ffff:"), int(port)


# ---- for raw aioquic clients and servers (the benchmark's baselines) ----
def connection_of(protocol: QuicConnectionProtocol) -> QuicConnection:
    """The QuicConnection an asyncio QuicConnectionProtocol drives."""
    return protocol._quic


def _stream_table(quic: QuicConnection) -> Mapping[int, Any]:
    """aioquic's stream table, read untyped: a WebTransport session's connection (aioquic_h3.py) stands in with a
    Mapping view of its own, and compiled (mypyc: this module is) a read of aioquic's declared `Dict` would
    refuse anything but a dict (tests/browser/test_webtransport_server.py)."""
    return cast(Mapping[int, Any], cast(Any, quic)._streams)


def stream_unacked(quic: QuicConnection, stream_id: int) -> int:
    """Bytes written to a stream and not yet acknowledged (0 for an unknown stream)."""
    stream = _stream_table(quic).get(stream_id)
    return len(stream.sender._buffer) if stream is not None else 0


def unacked_total(quic: QuicConnection) -> int:
    """Bytes written and not yet acknowledged, over every stream aioquic keeps."""
    return sum(len(s.sender._buffer) for s in _stream_table(quic).values())


def new_streams_waiting(quic: QuicConnection) -> bool:
    """Whether aioquic holds a stream we opened that the peer's MAX_STREAMS does not allow yet."""
    return bool(cast(Any, quic)._streams_blocked_uni)  # (untyped: a WebTransport session's is a property)


def live_streams(quic: QuicConnection) -> Container[int]:
    """The ids of the streams aioquic still keeps (a live view: a stream leaves once it is finished both ways,
    for a stream we only sent on: once its data and FIN are acknowledged)."""
    return _stream_table(quic)


def datagrams_pending(quic: QuicConnection) -> deque[bytes]:
    """aioquic's queue of datagrams not yet sent (a live view: it shrinks as packets go out)."""
    return quic._datagrams_pending


def server_port(server: Any) -> int:
    """The UDP port an aioquic `serve()` server listens on."""
    transport = server._transport
    assert transport is not None
    return int(transport.get_extra_info("sockname")[1])


# ---- the recording's figures (guarded) ----
def original_destination_cid(quic: Any) -> bytes | None:
    """The original destination connection id (chosen by the client, kept by the server through a retry), which
    both sides of a connection know alike; None if this aioquic does not say."""
    cid = getattr(quic, "_original_destination_connection_id", None)
    return cid if isinstance(cid, bytes) and cid else None


class QuicStatsProbe:
    """Samples one QUIC connection's congestion state (every read guarded)."""

    def __init__(self, quic: Any) -> None:
        """Start counting lost packets on `quic`."""
        self._loss = getattr(quic, "_loss", None)
        self.packets_lost: int | None = None
        original = getattr(self._loss, "_on_packets_lost", None)
        if original is not None:
            self.packets_lost = 0

            def counting(*args: Any, **kwargs: Any) -> Any:
                packets = kwargs.get("packets", ())
                self.packets_lost = (self.packets_lost or 0) + len(packets)
                return original(*args, **kwargs)

            self._loss._on_packets_lost = counting  # type: ignore[union-attr]

    def sample(self) -> tuple[float | None, int | None, int | None, int | None]:
        """(smoothed RTT in s, congestion window, bytes in flight, packets lost so far)."""
        loss = self._loss
        rtt = getattr(loss, "_rtt_smoothed", None)
        cc = getattr(loss, "_cc", None)
        cwnd = getattr(cc, "congestion_window", None)
        in_flight = getattr(cc, "bytes_in_flight", None)
        return (
            float(rtt) if rtt else None,
            int(cwnd) if cwnd is not None else None,
            int(in_flight) if in_flight is not None else None,
            self.packets_lost,
        )
