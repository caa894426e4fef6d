"""benchmarks/channel_instructions.py (the per-call instruction count, typed and `--untyped`) measures what it
says: every call is a request with a new reply channel, answered by the server, on one connection; counted on
the server's side (its `Tally`), for both variants and with calls in flight. The instrument's figures are
instruction counts under callgrind; here it runs on the test's loop, a few calls, nothing timed."""

from __future__ import annotations

import pytest

from aqueduct.bench.tally import Tally
from aqueduct.quic.certs import DevCerts
from benchmarks.channel_instructions import run

WARMUP, CALLS = 8, 20


@pytest.mark.parametrize("typed", [True, False], ids=["typed", "untyped"])
@pytest.mark.parametrize("flight", [1, 4])
async def test_every_call_is_a_new_channel_answered_by_the_server(certs: DevCerts, typed: bool, flight: int) -> None:
    tally = Tally()
    await run(certs.cert.parent, WARMUP, CALLS, flight, typed=typed, tally=tally)
    made = (WARMUP // flight + CALLS // flight) * flight
    assert tally.accepted == 1
    assert (tally.calls, tally.channels) == (made, made)
