"""Connection stats from an aioquic `QuicConnection`: RTT, congestion window, bytes in flight, packets lost.

aioquic keeps these in its loss-recovery object (`_loss`), which is private
API; every read is guarded so a changed aioquic yields nulls, never an
error. aioquic does not count lost packets, so the probe wraps the
instance's `_on_packets_lost` to count them (the class is untouched).
"""

from __future__ import annotations

from typing import Any


class QuicStatsProbe:
    """Samples one QUIC connection's congestion state."""

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
