"""Server.drain closes its connections concurrently, within its grace period (issue 26 item 10).

It used to close idle connections one at a time, awaiting each close (up to 1 s) before the next and before
looking at the grace deadline: 200 clients that had vanished kept a `--grace 2` server draining for ~30 s.
The test counts, over real connections whose clients were killed, how many closes had been issued when the
first one returned: all of them, if they run at once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import aqueduct
from aqueduct.api import endpoints
from aqueduct.api.link import ConnectionLink
from aqueduct.quic.certs import make_dev_certs
from aqueduct.quic.settings import TransportSettings
from tests.reliability.vanishing import vanished_clients

N = 30


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "busy past the grace"])
def test_drain_issues_every_close_before_waiting_for_any(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         busy: bool) -> None:
    calls = {"issued": 0, "when_first_returned": 0}
    inner = ConnectionLink.close

    async def close(self: ConnectionLink, *args: Any, **kwargs: Any) -> None:
        calls["issued"] += 1
        try:
            await inner(self, *args, **kwargs)
        finally:
            calls["when_first_returned"] = calls["when_first_returned"] or calls["issued"]

    async def scenario() -> None:
        certs = make_dev_certs(tmp_path)
        settings = TransportSettings(max_connections_per_address=N)
        async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, codec=aqueduct.RawCodec(),
                                  settings=settings) as server:
            async with vanished_clients(server.address[1], N, certs):
                pass
            assert len(server.connections) == N
            if busy:  # as if a channel were open on each: drain waits out the grace period, then closes them all
                monkeypatch.setattr(endpoints, "_idle", lambda conn: conn.is_closed)
            monkeypatch.setattr(ConnectionLink, "close", close)
            await asyncio.wait_for(server.drain(0.2 if busy else 5.0), 60)
            assert calls["issued"] == N
            assert calls["when_first_returned"] == N, f"close {calls['when_first_returned']} of {N} returned first"

    asyncio.run(scenario())
