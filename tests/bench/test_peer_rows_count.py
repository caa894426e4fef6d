"""Each peer row of `aqueduct bench --peers` measures what its name says, proven by counting on the far side.

The row's own code runs (measure.py's `measure`, the function its measuring process runs, and `_calls`, the
request/reply it times) against its server in this process, and the server's `Tally` (bench/tally.py) is
compared with what the row reports: the "aqueduct request" row's server sees one new channel (the oneshot) per
call and no channel pair; the "aqueduct pair" row's server sees one pair for the whole row and every call on it;
a streaming row's server counts the messages the row reports; a connect row makes a new connection each time,
its 0-RTT connections accepted as 0-RTT on the server; the idle-memory figure holds as many connections as it
divides by. Tiny sizes; no timing asserted.

(At d2316f7 `_calls` used `client.calls` whenever the client had it, and Aqueduct's client always has it: the
"aqueduct request" row ran the pair. The request tests below fail there.)
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

import pytest

from aqueduct.bench.protocol import ECHO, PING, REQUEST, SINK, TYPED_SINK
from aqueduct.quic.certs import DevCerts, make_dev_certs
from benchmarks.peers import BY_NAME, KINDS, unavailable
from benchmarks.peers.measure import _calls, measure
from benchmarks.peers.serve import Served

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> DevCerts:
    return make_dev_certs(tmp_path_factory.mktemp("row-certs"))


async def _serve(kind: str, certs: DevCerts) -> tuple[ModuleType, Served]:
    why = unavailable(kind)
    if why is not None:
        pytest.skip(why)
    module = importlib.import_module(f"benchmarks.peers.{KINDS[kind].module}")
    served: Served = await module.serve(str(certs.cert), str(certs.key), KINDS[kind].variant)
    return module, served


def _described(served: Served) -> dict[str, Any]:
    """The server as its process would describe it to a measuring process (serve.py)."""
    return {"info": served.info, "pids": served.pids, "memory_pid": os.getpid()}


async def _row_calls(kind: str, row: str, inflight: int, certs: DevCerts) -> tuple[list[float], Served]:
    module, served = await _serve(kind, certs)
    client = module.Client(served.info, certs.ca, BY_NAME[row].variant)
    try:
        await client.open()
        before = served.tally.calls, served.tally.channels
        lat = await _calls(client, BY_NAME[row], inflight, 0.0)
        served.tally.calls -= before[0]
        served.tally.channels -= before[1]
    finally:
        await client.close()
        await served.stop()
    return lat, served


@pytest.mark.parametrize("row", ["aqueduct request", "aqueduct typed request"])
@pytest.mark.parametrize("inflight", [1, 4])
async def test_the_request_rows_open_one_new_channel_per_call(row: str, inflight: int, certs: DevCerts) -> None:
    lat, served = await _row_calls("aqueduct", row, inflight, certs)
    t = served.tally
    assert len(lat) == inflight  # (a window of 0: each caller makes one call)
    assert t.commands[ECHO] == 0  # no channel pair
    assert t.calls == len(lat) and t.commands[REQUEST] == (len(lat) if row == "aqueduct request" else 0)
    assert t.channels == len(lat)  # each call's request carried one new channel: its reply oneshot


@pytest.mark.parametrize("inflight", [1, 4])
async def test_the_pair_row_opens_one_pair_for_the_whole_row(inflight: int, certs: DevCerts) -> None:
    lat, served = await _row_calls("aqueduct", "aqueduct pair", inflight, certs)
    t = served.tally
    assert t.commands[ECHO] == 1 and t.commands[REQUEST] == t.calls == 0
    assert t.channels == 2  # the pair: the echo's receiver and its reply sender, once
    assert t.messages == len(lat) >= inflight  # every call went through the one pair


@pytest.mark.parametrize(("row", "oneway_commands", "calls"), [
    ("aqueduct request", {}, True), ("aqueduct typed request", {}, True), ("aqueduct pair", {}, False),
    ("aqueduct raw", {SINK: 2}, False), ("aqueduct typed", {TYPED_SINK: 2}, False),
])
async def test_each_aqueduct_row_drives_the_workload_its_name_says(row: str, oneway_commands: dict[bytes, int],
                                                                   calls: bool, certs: DevCerts) -> None:
    """The whole row as its measuring process runs it: which commands reached the server, and how many."""
    _, served = await _serve("aqueduct", certs)
    try:
        figures = await measure(BY_NAME[row], _described(served), certs.ca, 0.0, 2, 2)
    finally:
        await served.stop()
    t = served.tally
    assert set(figures) >= set(BY_NAME[row].workloads) - {"conn_mem", "rr1", "rr32"}
    if "rr1" in BY_NAME[row].workloads:
        # warm-up and measurement at 1 and at 32 in flight: fresh oneshots (request) or four pairs (pair)
        assert (t.calls > 0, t.commands[ECHO]) == ((True, 0) if calls else (False, 4))
    for cmd in (SINK, TYPED_SINK):
        assert t.commands[cmd] == oneway_commands.get(cmd, 0)  # the warm-up and the measured stream
    if row == "aqueduct raw":  # 2 setups 1-RTT, the first ticket, 2 setups 0-RTT, 2 idle, the row's own
        assert t.commands[PING] == 5 and len(t.connections) == 1 + 5 + 2


async def test_a_streaming_row_reports_what_the_server_counted(certs: DevCerts) -> None:
    for row in ("aqueduct raw", "aqueduct typed"):
        module, served = await _serve("aqueduct", certs)
        client = module.Client(served.info, certs.ca, BY_NAME[row].variant)
        try:
            await client.open()
            rate = await client.oneway(64, 60.0, 37)  # the limit ends it
        finally:
            await client.close()
            await served.stop()
        assert rate.messages == served.tally.messages == 37
        assert served.tally.commands[TYPED_SINK if row == "aqueduct typed" else SINK] == 1


@pytest.mark.parametrize("zero_rtt", [False, True])
async def test_the_connect_rows_make_a_new_connection_each_time(zero_rtt: bool, certs: DevCerts) -> None:
    module, served = await _serve("aqueduct", certs)
    client = module.Client(served.info, certs.ca, "raw")
    try:
        await client.open()
        before = len(served.tally.connections)
        for _ in range(3):
            assert await client.connect_first_reply(zero_rtt) > 0
        new = served.tally.connections[before:]
    finally:
        await client.close()
        await served.stop()
    # 0-RTT first makes one connection for its first ticket; then each setup is a new connection
    assert len(new) == 3 + zero_rtt
    assert [c.zero_rtt for c in new[-3:]] == [zero_rtt] * 3  # as the server accepted them


async def test_the_idle_memory_row_holds_the_connections_it_divides_by(certs: DevCerts) -> None:
    from benchmarks.peers.measure import idle_memory

    module, served = await _serve("aqueduct", certs)
    client = module.Client(served.info, certs.ca, "raw")
    try:
        await client.open()
        before = len(served.tally.connections)
        await idle_memory(client, 5, os.getpid())
        new = served.tally.connections[before:]
    finally:
        await client.close()
        await served.stop()
    assert len(new) == 5 and served.tally.commands[REQUEST] == 5


OTHER_PEERS = {"grpcio h2c": "grpc-h2c", "grpcio TLS": "grpc-tls", "zeromq": "zmq", "nats": "nats"}


@pytest.mark.parametrize("row", list(OTHER_PEERS))
async def test_each_other_peer_row_is_counted_on_its_server(row: str, certs: DevCerts) -> None:
    """grpcio, ZeroMQ, NATS: calls on the one client connection, the streamed count, a new connection per
    connect-to-first-reply and per idle connection, each counted by the server."""
    from benchmarks.peers.measure import idle_memory

    module, served = await _serve(OTHER_PEERS[row], certs)
    t = served.tally
    client = module.Client(served.info, certs.ca, BY_NAME[row].variant)
    try:
        await client.open()
        lat = await _calls(client, BY_NAME[row], 4, 0.0)
        assert t.calls == len(lat) == 4 and len(t.connections) == 1  # four callers, one connection
        rate = await client.oneway(64, 60.0, 37)  # the limit ends it
        assert rate.messages == t.messages == 37
        before = len(t.connections)
        for _ in range(3):
            await client.connect_first_reply(False)
        assert len(t.connections) == before + 3 and t.calls == 4 + 3
        await idle_memory(client, 2, os.getpid())
        assert len(t.connections) == before + 3 + 2
        if row.startswith("grpcio"):  # the server saw TLS on every connection of the TLS row, and only there
            assert {security for _, security in t.connections} == {"ssl" if row == "grpcio TLS" else "insecure"}
    finally:
        await client.close()
        await served.stop()
