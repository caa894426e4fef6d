"""Fixtures for service tests: a served Calc and a client connected with the Calculator interface."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aqueduct
from aqueduct.quic.certs import DevCerts

from .calc import Calc, Calculator


@contextlib.asynccontextmanager
async def served(certs: DevCerts, impl: Calc | None = None, server_kw: dict[str, Any] | None = None,
                 **client_kw: Any) -> AsyncIterator[tuple[Calc, aqueduct.ServiceConnection[Calculator],
                                                          aqueduct.Server[Any]]]:
    """Serve `impl` (a fresh Calc) on a loopback port and connect to it; yield (impl, connection, server)."""
    impl = impl or Calc()
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, service=impl,
                              **(server_kw or {})) as server:
        host, port = server.address
        async with aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca, service=Calculator,
                                    **client_kw) as conn:
            yield impl, conn, server
