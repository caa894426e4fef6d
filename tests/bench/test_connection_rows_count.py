"""The connection rows of `aqueduct bench --connections` measure what their names say, counted by the server.

Each kind's server (connpeer.py, a process of its own as in a run) reports the connections it accepted since it
started (tally.py) beside those it holds: the handshake rows' count of opened connections is the server's count
of new ones, one at a time and many at once; the idle-memory row divides by connections the server holds; the echo
rows each run on a new connection. Tiny sizes; no timing asserted.
"""

from __future__ import annotations

import pytest

from aqueduct.bench.connections import KINDS, ConnectionPeer, echo_p50, handshakes, open_many, opener
from aqueduct.quic.certs import DevCerts, make_dev_certs

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> DevCerts:
    return make_dev_certs(tmp_path_factory.mktemp("connection-certs"))


@pytest.mark.parametrize("kind", list(KINDS))
async def test_each_connection_row_is_counted_by_its_server(kind: str, certs: DevCerts) -> None:
    peer = ConnectionPeer(kind, certs.cert, certs.key)
    try:
        open_one = opener(kind, peer.port, certs.ca)
        for concurrency in (1, 4):  # hs_seq, hs_32 (fewer at once here)
            before = (await peer.memory())["accepted"]
            opened, _ = await handshakes(open_one, 0.05, concurrency)
            assert opened >= concurrency and (await peer.memory())["accepted"] - before == opened
        before = (await peer.memory())["accepted"]
        await echo_p50(kind, peer.port, certs.ca, 0.01)  # rtt_idle_server / rtt_loaded: a new connection
        assert (await peer.memory())["accepted"] == before + 1
        closes, failed = await open_many(open_one, 6)  # conn_mem's idle connections
        held = await peer.memory()
        assert (len(closes), failed, held["accepted"]) == (6, 0, before + 1 + 6) and held["connections"] >= 6
        for close in closes:
            await close()
    finally:
        peer.stop()
