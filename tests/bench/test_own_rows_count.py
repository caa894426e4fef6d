"""Each Aqueduct row of `aqueduct bench` (the default rows) measures what its name says, counted on the far side.

The row's own client (runner._make_client, as the run makes it) drives its server, here in this process with
the bench's command server (aqserver.py) counting on its side (bench/tally.py) and the server connection's
statistics counting by delivery mode: a streaming row's server counts the messages the row reports, each
arriving in the delivery mode the row's name says (unreliable ones as datagrams; the wire does not tell
unordered from ordered, so the unordered rows' mode is read at the sender: once they were ordered channels,
tests/bench/test_bench_smoke.py); a typed row's messages reach a typed receiver;
a round-trip row's server echoes as many messages as the row timed; the channel row's server gets one new
channel per message; a connect row makes a new connection each time, its 0-RTT ones accepted as 0-RTT on the
server. The tuned rows' measuring process (remote.py) uses the same client with tuned settings, so they are
included with those settings. The reference rows (raw aioquic on a stream, its datagrams, a stream per message,
TCP, Marlin Stream) are counted the same way by peer.py's servers (peer.TALLY). Tiny sizes; no timing asserted.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

import aqueduct
from aqueduct.bench import aqserver
from aqueduct.bench.protocol import CHANNELS, ECHO, PING, SINK, TYPED_CHANNELS, TYPED_SINK
from aqueduct.bench.runner import TRANSPORTS, Transport, _make_client
from aqueduct.bench.settings import bench_settings
from aqueduct.bench.tally import Tally
from aqueduct.core.app import Delivery
from aqueduct.quic.certs import DevCerts, make_dev_certs

pytestmark = pytest.mark.timeout(120)
ROWS = [t for t in TRANSPORTS if t.family == "aqueduct"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> DevCerts:
    return make_dev_certs(tmp_path_factory.mktemp("own-row-certs"))


@contextlib.asynccontextmanager
async def served(t: Transport, certs: DevCerts) -> AsyncIterator[tuple[Any, Tally]]:
    """The row's server (its codec and settings, as peer.py serves it) counting in a Tally; the row's client."""
    tally = Tally()
    codec = aqueduct.RawCodec() if t.codec == "raw" else aqueduct.CborCodec()
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, codec=codec,
                              settings=bench_settings(t.tuned), single_use_tickets=True) as server:
        task = asyncio.ensure_future(aqserver.accept(server, t.codec, tally))
        port = server.address[1]
        key = "aqueduct-tuned" if t.tuned else f"aqueduct-{t.codec}"
        client = _make_client(t, {key: port}, certs.ca)
        try:
            yield client, tally
        finally:
            task.cancel()


def _received(tally: Tally) -> dict[str, int]:
    """Messages the server's connections received, by delivery mode."""
    out = {"ordered": 0, "unordered": 0, "unreliable": 0}
    for conn in tally.connections:
        for mode, (_, _, received, _) in conn.stats.by_mode().items():
            out[mode] += received
    return out


@pytest.mark.parametrize("t", [t for t in ROWS if "msg64" in t.workloads], ids=lambda t: t.name)
async def test_a_streaming_row_reports_the_count_of_its_mode_on_the_server(t: Transport, certs: DevCerts) -> None:
    async with served(t, certs) as (client, tally):
        await client.open()
        try:
            rate = await client.oneway(64, 60.0, 41)  # the limit ends it
        finally:
            await client.close()
    assert rate.messages == tally.messages
    assert tally.commands[TYPED_SINK if t.typed else SINK] == 1
    by_mode = _received(tally)
    if t.mode is Delivery.UNRELIABLE:
        assert 0 < by_mode["unreliable"] <= 41 and rate.messages == by_mode["unreliable"]  # datagrams may drop
    else:
        # (+ the command); the wire does not tell an unordered message from an ordered one (core/intake.py), so a
        # receiver counts both as ordered: the unordered rows' mode is checked at the sender (client.conn.stats)
        assert rate.messages == 41 and by_mode["ordered"] == 41 + 1
        assert client.conn.stats.unordered_sent == (41 if t.mode is Delivery.UNORDERED else 0)


@pytest.mark.parametrize("t", [t for t in ROWS if "rtt_p50" in t.workloads], ids=lambda t: t.name)
async def test_a_round_trip_row_times_what_the_server_echoed(t: Transport, certs: DevCerts) -> None:
    async with served(t, certs) as (client, tally):
        await client.open()
        try:
            lat = await client.rtt(64, 60.0, 9)
        finally:
            await client.close()
    assert len(lat) == tally.messages == 9 and tally.commands[ECHO] == 1
    assert client.conn.stats.unordered_sent == (9 if t.mode is Delivery.UNORDERED else 0)  # (see above)


@pytest.mark.parametrize("t", [t for t in ROWS if "channels" in t.workloads], ids=lambda t: t.name)
async def test_the_channel_row_opens_a_new_channel_per_message(t: Transport, certs: DevCerts) -> None:
    async with served(t, certs) as (client, tally):
        await client.open()
        try:
            rate = await client.channels(60.0, 13)
        finally:
            await client.close()
    assert rate.messages == tally.messages == 13
    assert tally.commands[TYPED_CHANNELS if t.typed else CHANNELS] == 1
    # each message carried a new channel, whose one message arrived on it: 13 carriers + 13 inner + the command
    assert _received(tally)["ordered"] == 13 + 13 + 1


@pytest.mark.parametrize("t", [t for t in ROWS if "setup_1rtt" in t.workloads], ids=lambda t: t.name)
async def test_the_connect_rows_make_a_new_connection_each_time(t: Transport, certs: DevCerts) -> None:
    async with served(t, certs) as (client, tally):
        for _ in range(2):
            assert (await client.setup(False))[1] is False
        await client.setup(True)  # its first ticket
        runs = [await client.setup(True) for _ in range(2)]
    assert tally.commands[PING] == len(tally.connections) == 5
    assert [c.zero_rtt for c in tally.connections] == [False, False, False, True, True]  # as the server saw them
    assert [accepted for _, accepted in runs] == [True, True]  # (what the row reports as 0-RTT accepted)


# ---- the reference rows: raw aioquic (a stream, datagrams, a stream per message), TCP and the extras (Marlin) ----
OTHERS = [t for t in TRANSPORTS if t.family != "aqueduct"]


@contextlib.asynccontextmanager
async def served_reference(t: Transport, certs: DevCerts,
                           monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Any, Tally]]:
    """The row's server as peer.py serves it, counting in peer.TALLY; the row's client as the runner makes it."""
    from aqueduct.bench import peer
    from aqueduct.bench.extras import extras

    tally = Tally()
    monkeypatch.setattr(peer, "TALLY", tally)
    extra = next((e for e in extras() if e.key == t.family), None)
    if extra is not None:
        server: Any = await extra.serve(peer._tcp_client)
        ports, close = {t.family: server.port}, server.close
    elif t.family == "tcp":
        tcp = await asyncio.start_server(peer._tcp_client, "127.0.0.1", 0)
        ports, close = {"tcp": tcp.sockets[0].getsockname()[1]}, tcp.close
    else:
        raw = await peer.start_raw_server(str(certs.cert), str(certs.key))
        ports, close = {"aioquic": peer._udp_port(raw)}, raw.close
    try:
        yield _make_client(t, ports, certs.ca), tally
    finally:
        close()


@pytest.mark.parametrize("t", [t for t in OTHERS if "msg64" in t.workloads], ids=lambda t: t.name)
async def test_a_reference_streaming_row_reports_what_its_server_counted(t: Transport, certs: DevCerts,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    async with served_reference(t, certs, monkeypatch) as (client, tally):
        await client.open()
        try:
            rate = await client.oneway(64, 60.0, 41)  # the limit ends it
        finally:
            await client.close()
    assert rate.messages == tally.messages
    if t.family == "datagrams":
        assert 0 < rate.messages <= 41 and set(tally.commands) == {b"D"}  # each a datagram, counted on arrival
    else:
        assert rate.messages == 41
    if t.family == "aioquic per message":
        assert set(tally.commands) == {b"V"} and tally.channels == 41  # one new stream per message
    elif t.family in ("aioquic", "tcp"):
        assert set(tally.commands) == {SINK} and tally.channels == 0


@pytest.mark.parametrize("t", [t for t in OTHERS if "rtt_p50" in t.workloads], ids=lambda t: t.name)
async def test_a_reference_round_trip_row_times_what_its_server_echoed(t: Transport, certs: DevCerts,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    async with served_reference(t, certs, monkeypatch) as (client, tally):
        await client.open()
        try:
            lat = await client.rtt(64, 60.0, 9)
        finally:
            await client.close()
    assert len(lat) == tally.messages == 9
    if t.family == "aioquic per message":
        assert tally.channels == 9  # each message out on a new stream


@pytest.mark.parametrize("t", [t for t in OTHERS if "setup_1rtt" in t.workloads], ids=lambda t: t.name)
async def test_a_reference_connect_row_makes_a_new_connection_each_time(t: Transport, certs: DevCerts,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    async with served_reference(t, certs, monkeypatch) as (client, tally):
        for _ in range(2):
            await client.setup(False)
        runs = []
        if "setup_0rtt" in t.workloads:
            await client.setup(True)  # its first ticket
            runs = [await client.setup(True) for _ in range(2)]
    assert tally.commands[PING] == len(tally.connections) == 2 + (3 if runs else 0)
    if runs:
        # (the 1-RTT ones full handshakes; raw aioquic's client keeps the tickets they brought, so its "first
        # ticket" connection may be 0-RTT already: it is not one of the row's)
        rows = tally.connections[:2] + tally.connections[3:]
        assert [c.early_data_accepted for c in rows] == [False, False, True, True]
        assert [accepted for _, accepted in runs] == [True, True]
