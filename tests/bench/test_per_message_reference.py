"""The unordered rows' reference: raw aioquic sending each message on its own new stream (no timing asserted)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aqueduct.bench import peer, runner
from aqueduct.bench.clients import SEND_BOUND
from aqueduct.bench.rawquic import STREAMS_BOUND, RawQuicClient
from aqueduct.bench.report import REFERENCE
from aqueduct.core.app import Delivery
from aqueduct.quic.certs import make_dev_certs


def test_unordered_rows_are_measured_against_a_stream_per_message() -> None:
    for t in runner.TRANSPORTS:
        if t.family == "aqueduct" and t.mode is Delivery.UNORDERED:
            assert REFERENCE[t.name] == runner.PER_MESSAGE, t.name
    ref = runner.BY_NAME[runner.PER_MESSAGE]
    assert set(ref.workloads) >= {"msg64", "msg16k", "rtt_p50"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("size", [64, 16 * 1024])
def test_the_peer_counts_every_message_even_when_the_command_ends_while_streams_are_queued(
        tmp_path: Path, size: int) -> None:
    """Streams are not ordered with each other: the count must include every message stream (more streams than
    STREAMS_BOUND, more bytes than SEND_BOUND, so the sender waits on both bounds along the way)."""
    n = max(3 * STREAMS_BOUND, 2 * SEND_BOUND // size)

    async def scenario() -> tuple[int, int, list[float]]:
        certs = make_dev_certs(tmp_path)
        proc, ports = peer.spawn(str(certs.cert), str(certs.key))
        try:
            client = RawQuicClient(ports["aioquic"], certs.ca, per_message=True)
            await client.open()
            first = await client.oneway(size, 60.0, n)
            second = await client.oneway(size, 60.0, 7)  # nothing of the first run is counted again
            trips = await client.rtt(size, 0.05, 5)
            await client.close()
            return first.messages, second.messages, trips
        finally:
            peer.stop(proc)

    first, second, trips = asyncio.run(scenario())
    assert (first, second) == (n, 7)
    assert 1 <= len(trips) <= 5 and all(t > 0 for t in trips)
