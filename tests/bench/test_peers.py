"""The peer rows of `aqueduct bench --peers` (benchmarks/peers/): each peer's clients give correct answers
at a tiny scale, a missing peer is reported and the run goes on, and the targets block lists every target.
No timing is asserted. nats-server comes from `scripts/setup-system.sh nats` (Debian's package)."""

from __future__ import annotations

import asyncio
import importlib

import pytest

from aqueduct.bench import report
from aqueduct.bench.runner import Options, Results, run
from aqueduct.cli import main
from aqueduct.quic.certs import DevCerts, make_dev_certs
from benchmarks import peers
from benchmarks.peers import KINDS, ROWS, Kind
from benchmarks.peers.measure import concurrent_calls, request_reply
from tests.system_deps import requires_system

ISSUE_28_TARGETS = {
    "fresh-oneshot request/reply, 1 in flight, calls/s vs grpcio TLS",
    "fresh-oneshot request/reply, 1 in flight, p50 vs grpcio TLS",
    "fresh-oneshot request/reply, 32 in flight, calls/s vs grpcio TLS",
    "channel creation (channels/s)",
    "connect to first echo (0-RTT) vs raw aioquic 0-RTT",
    "connect to first reply (0-RTT) vs grpcio TLS connect",
    "handshakes/s sequential vs raw aioquic",
    "handshakes/s 32 concurrent vs raw aioquic",
    "server memory per idle connection vs raw aioquic",
    "ordered 64 B msgs/s vs raw aioquic",
    "unreliable 64 B msgs/s vs raw datagrams",
    "typed 64 B msgs/s vs untyped cbor (same run)",
    "ordered RTT p50 vs raw aioquic",
    "Aqueduct goodput at 1% kernel loss vs raw aioquic",
    "Aqueduct goodput at 5% kernel loss vs raw aioquic",
}


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> DevCerts:
    return make_dev_certs(tmp_path_factory.mktemp("peer-certs"))


@pytest.fixture(scope="module")
def nats_server() -> None:
    requires_system("nats")  # scripts/setup-system.sh nats
    assert peers.unavailable("nats") is None


KIND_OF_ROW = {"aqueduct request": "aqueduct", "grpcio h2c": "grpc-h2c", "grpcio TLS": "grpc-tls", "zeromq": "zmq",
               "nats": "nats"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("row", list(KIND_OF_ROW))
async def test_request_reply_and_streaming_give_correct_answers(row: str, certs: DevCerts,
                                                                request: pytest.FixtureRequest) -> None:
    kind = KINDS[KIND_OF_ROW[row]]
    if kind.program is not None:
        request.getfixturevalue("nats_server")
    assert peers.unavailable(KIND_OF_ROW[row]) is None  # the bench extra is in dev: CI has every library
    module = importlib.import_module(f"benchmarks.peers.{kind.module}")
    served = await module.serve(str(certs.cert), str(certs.key), kind.variant)
    client = module.Client(served.info, certs.ca, peers.BY_NAME[row].variant)
    try:
        await client.open()
        bodies = [bytes([i]) * (i + 1) for i in range(8)]
        assert await asyncio.gather(*(client.call(b) for b in bodies)) == bodies  # 8 in flight, each its own
        lat = await concurrent_calls(client.call, b"x" * 64, 4, 0.0)  # raises if an answer differs
        assert len(lat) == 4
        rate = await client.oneway(64, 60.0, 50)  # the limit ends it: the server counted every message
        assert (rate.messages, rate.nbytes) == (50, 50 * 64)
        assert await client.connect_first_reply(False) > 0
        close = await client.open_idle()
        await close()
    finally:
        await client.close()
        await served.stop()


@pytest.mark.timeout(60)
async def test_the_pair_variant_pipelines_32_and_checks_every_reply(certs: DevCerts) -> None:
    module = importlib.import_module("benchmarks.peers.aqueduct")
    served = await module.serve(str(certs.cert), str(certs.key), "")
    client = module.Client(served.info, certs.ca, "pair")
    try:
        await client.open()
        figures = await request_reply(client, peers.BY_NAME["aqueduct pair"], 32, 0.0, [])
        assert figures["rr32"] > 0 and figures["rr32_p50"] <= figures["rr32_p99"]
        assert set(figures) == {"rr32", "rr32_p50", "rr32_p99", "rr32_cpu_server", "rr32_cpu_client"}
    finally:
        await client.close()
        await served.stop()


@pytest.mark.timeout(240)
def test_a_tiny_peer_run_fills_the_rows_and_compares_requests_with_grpc_tls(nats_server: None) -> None:
    names = ("grpcio TLS", "aqueduct request", "aqueduct raw", "nats")
    opts = Options(rounds=1, window=0.05, setups=1, api_channels=0, engine_channels=0, only=names, peers=True,
                   peer_idle=4)
    results = asyncio.run(run(opts))
    assert results.unmeasured == {}
    cells = {(c.transport, c.workload): c for c in report.cells(results)}
    for row in ROWS:
        if row.name in names:
            for w in row.workloads:
                keys = peers.RR if w in ("rr1", "rr32") else (w,)
                assert all((row.name, k) in cells for k in keys), (row.name, w)
    assert cells[("grpcio TLS", "rr1")].ratio == pytest.approx(1.0)
    assert cells[("aqueduct request", "rr32")].reference == "grpcio TLS"
    name = "connect to first reply (0-RTT) vs grpcio TLS connect"
    target = next(t for t in report.targets(results) if t.name == name)
    assert target.value is not None and target.met is not None


def test_a_missing_peer_is_reported_and_the_run_goes_on(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(KINDS, "zmq", Kind("zmq", "", "no_such_zmq_library"))
    monkeypatch.setitem(KINDS, "nats", Kind("nats", "", "nats", "no-such-nats-server"))
    assert main(["bench", "--peers", "--only", "zeromq", "--only", "nats", "--only", "tcp", "--rounds", "1",
                 "--window", "0.02", "--setups", "1", "--api-channels", "0", "--engine-channels", "0", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "peer zeromq: not measured: no_such_zmq_library not installed (pip install 'aqueduct-quic[bench]')" in out
    assert "peer nats: not measured: no-such-nats-server not installed (scripts/setup-system.sh nats)" in out
    assert "64 B one way (msgs/s)" in out and " tcp " in out  # the rest of the run was measured


def test_the_targets_block_lists_every_target_measured_or_not() -> None:
    empty = Results(options={})
    targets = report.targets(empty)
    assert ISSUE_28_TARGETS <= {t.name for t in targets}
    assert all(t.met is None and t.value is None for t in targets)
    text = report.table(empty)
    block = text.split("targets:\n", 1)[1]
    for t in targets:
        assert t.name in block
    assert block.count(" n/a") == len(targets)


ISSUE_34_TARGETS = [
    "typed fresh-oneshot calls/s, 1 in flight, vs grpcio aio TLS",
    "typed fresh-oneshot p50, 1 in flight, vs grpcio aio TLS",
    "typed fresh-oneshot calls/s, 32 in flight, vs grpcio aio TLS",
    "typed service call CPU vs plain request (1 in flight)",
    "64 B ordered one way vs raw aioquic",
    "typed 64 B one way vs untyped (cbor)",
    "connect to first reply, 1-RTT, vs raw aioquic",
    "connect to first reply, 0-RTT, vs raw aioquic",
]


def test_the_issue_34_block_gives_each_target_its_rounds_spread_and_met_or_not() -> None:
    """Each target is the median of per-round ratios (rounds alternate: a round's two rows are its fair pair),
    with the lowest and highest round, never the best run alone."""
    samples = {"aqueduct typed request": {"rr1": [900.0, 1200.0, 1000.0]}, "grpcio TLS": {"rr1": [1000.0] * 3},
               "aqueduct ordered raw": {"setup_1rtt": [2.0, 4.0, 3.0]}, "aioquic": {"setup_1rtt": [2.0, 2.0, 2.0]}}
    figures = {"calls_s": [1.0], "p50_us": [1.0], "p99_us": [1.0]}
    services = {"service call (1 in flight)": {"client_cpu_us": [100.0], "server_cpu_us": [100.0], **figures},
                "aqueduct.request fresh oneshot (1 in flight)": {"client_cpu_us": [90.0], "server_cpu_us": [90.0],
                                                                 **figures}}
    got = {t.name: (t, s) for t, s in report.channel_per_call_targets(Results(options={}, samples=samples,
                                                                              services=services))}
    assert list(got) == ISSUE_34_TARGETS
    t, s = got["typed fresh-oneshot calls/s, 1 in flight, vs grpcio aio TLS"]
    assert (t.value, t.met) == (1.0, True) and s is not None and (s.low, s.high, s.rounds) == (0.9, 1.2, 3)
    t, s = got["connect to first reply, 1-RTT, vs raw aioquic"]
    assert (t.value, t.met, s and s.high) == (1.5, False, 2.0)
    t, _ = got["typed service call CPU vs plain request (1 in flight)"]
    assert t.value == pytest.approx(200 / 180) and t.met is False  # 1.11x > 1.1x
    text = report.table(Results(options={}, samples=samples, services=services))
    block = text.split("targets, issue 34", 1)[1].split("\ntargets:", 1)[0]
    assert all(name in block for name in ISSUE_34_TARGETS)
    assert block.count(" NOT met") == 2 and block.count(" n/a") == 5 and "[0.90-1.20, 3 rounds]" in block
