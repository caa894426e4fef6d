"""Red team, payloads (issue 26, items 1 and 2): crafted CBOR against a live typed server while a good client works.

The server is a separate process: examples/typed_service.py's quote desk (`serve(entrypoint=Request)`, a handler
that catches ValidationError as README's does), started in its `serve` mode with a metrics endpoint
(`aqueduct serve` runs only the raw-codec echo service, which decodes nothing). A good client asks for quotes
on its own connection the whole time (live.GoodClient); the attacker, a second connection announcing the CBOR
codec, sends each payload of tests/api/payloads.py REPEAT times, with reply channels attached where the
payload references them. Asserted per attack: the good client completed round trips during it (the event
loop was not stuck: counted, never timed), the server's resident memory grew by less than RSS_BOUND_MIB, the
attacker's connection was not closed (no close code: a bad message is dropped, not a protocol error) and its
own next request is answered (the desk survived), and the server process is alive. Each run prints a
FIGURES line (rss before / peak / after, round trips during the attack) for the closing note.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import aqueduct
from aqueduct import RawMessage
from aqueduct.quic.certs import DevCerts
from tests.api.payloads import ATTACKS, ForgedCbor

from .live import GUARD, GoodClient, LiveServer, Watch, figures, live_process

EXAMPLE = Path(__file__).parents[2] / "examples" / "typed_service.py"
REPEAT = 20
"""How many times each payload is sent."""
RSS_BOUND_MIB = 64
"""Most the server's resident memory may rise during one attack (the fixed code stays within a few MiB)."""
RED_TEAM = ["dag-40", "self-list", "lagged-tag", "lagged-tag-nested", "0xff", "truncated", "attachment-7",
            "attachment-minus-1", "nested-100000"]


async def quote(conn: aqueduct.Connection[Any]) -> None:
    """The good client's round trip: ask the desk for a quote (an untyped client: the reply is a dict)."""
    reply = await aqueduct.request(conn.entrypoint, lambda r: {"sym": "GOOD", "reply": r}, timeout=GUARD)
    assert reply["sym"] == "GOOD"


@dataclass
class Result:
    """What one attack did to the server, for the assertions and the FIGURES line."""

    line: str
    growth_mib: float
    round_trips_during: int
    attacker_closed: bool
    attacker_served: bool
    server_alive: bool


async def attack(server: LiveServer, certs: DevCerts, name: str, payload: bytes, attachments: int,
                 repeat: int = REPEAT) -> Result:
    """Send `payload` `repeat` times from an attacker connection while GoodClient asks for quotes; measure."""
    async with GoodClient(server.url, certs, round_trip=quote) as good, \
            aqueduct.connect(server.url, ca=certs.ca, codec=ForgedCbor()) as attacker:
        await good.served_during()
        async with Watch(server) as watch:
            before = good.round_trips
            try:
                async with asyncio.timeout(GUARD):  # (sends wait for credit: a desk that died never grants it)
                    for _ in range(repeat):
                        halves = [aqueduct.oneshot()[0] for _ in range(attachments)]
                        await attacker.entrypoint.send(RawMessage(payload, list(halves)))
                    await quote(attacker)  # its own next request: answered if its desk survived, the loop free
                attacker_served = True
            except (TimeoutError, aqueduct.AqueductError):
                attacker_served = False
            during = await good.served_during() - before
        closed = attacker.is_closed
    alive = server.proc.returncode is None
    line = figures(f"redteam-payload {name}", watch, round_trips_during=during, attacker_closed=closed,
                   attacker_served=attacker_served, server_alive=alive)
    return Result(line, watch.growth_mib, during, closed, attacker_served, alive)


def typed_desk(certs: DevCerts) -> Any:
    """The example's desk as a live process with a metrics endpoint."""
    return live_process(sys.executable, str(EXAMPLE), "serve", "--cert", str(certs.cert), "--key", str(certs.key),
                        "--metrics-port", "0")


@pytest.mark.parametrize("name", RED_TEAM)
async def test_a_live_typed_server_under_a_crafted_payload_keeps_serving(certs: DevCerts, name: str) -> None:
    payload, attachments = ATTACKS[name]
    async with asyncio.timeout(6 * GUARD), typed_desk(certs) as server:
        result = await attack(server, certs, name, payload, attachments)
    assert result.server_alive
    assert result.round_trips_during >= 1, result.line  # (the good client's next round trip completed)
    assert not result.attacker_closed and result.attacker_served, result.line
    assert result.growth_mib < RSS_BOUND_MIB, result.line


async def test_the_example_desk_survives_one_0xff_byte(certs: DevCerts) -> None:
    """README's claim, literally: one byte 0xff to examples/typed_service.py, then a good request on the same
    connection is answered."""
    async with asyncio.timeout(4 * GUARD), typed_desk(certs) as server, \
            aqueduct.connect(server.url, ca=certs.ca, codec=ForgedCbor()) as conn:
        await conn.entrypoint.send(RawMessage(b"\xff"))
        await quote(conn)
        assert server.proc.returncode is None
