"""Shared benchmark settings: the Aqueduct transport settings both peers use, and the raw baseline's ALPN."""

from __future__ import annotations

from dataclasses import replace

from ..quic.settings import TransportSettings

RAW_ALPN = "bench-raw"


def bench_settings(**overrides: object) -> TransportSettings:
    """Aqueduct defaults, except many connections per address (set-up rounds open dozens)."""
    return replace(TransportSettings(), max_connections_per_address=1024, **overrides)  # type: ignore[arg-type]
