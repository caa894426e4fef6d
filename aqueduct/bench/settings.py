"""Shared benchmark settings: the Aqueduct transport settings both peers use, and the raw baseline's ALPN."""

from __future__ import annotations

from dataclasses import replace

from ..quic.settings import TransportSettings

RAW_ALPN = "bench-raw"
TUNED_PACKET_SIZE = 16384
"""UDP payload of the tuned Aqueduct rows: loopback carries 64 KiB datagrams; aioquic 1.7 garbles above ~16 KiB."""


def bench_settings(tuned: bool = False) -> TransportSettings:
    """Aqueduct defaults, except many connections per address (set-up rounds open dozens); `tuned`: large
    packets (TUNED_PACKET_SIZE), the best configuration for loopback and LANs with jumbo frames."""
    settings = replace(TransportSettings(), max_connections_per_address=1024)
    return replace(settings, packet_size=TUNED_PACKET_SIZE) if tuned else settings
