"""0-RTT against 1-RTT: time from `connect()` to the first echo reply, against `aqueduct serve --echo`.

    python benchmarks/quic_handshake.py [--rounds 20]

The echo server runs in its own process on loopback. Each round opens a new
connection, sends one message carrying a reply channel and waits for the
echo. "1-RTT" rounds have no session ticket; "0-RTT" rounds resume with the
ticket of the previous connection, so the message leaves in the first flight
(by default the server holds 0-RTT work until the handshake completes;
with --single-use-tickets it runs it at once). Prints medians (ms) as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.bench.clients import WaitableTickets
from aqueduct.quic.certs import DevCerts, make_dev_certs


async def one(url: str, certs: DevCerts, store: WaitableTickets | None) -> tuple[float, bool]:
    """(ms from connect() to the first echo, whether 0-RTT was accepted)."""
    if store is not None:
        store.arrived.clear()
    start = time.perf_counter()
    conn = await aqueduct.connect(url, ca=certs.ca, codec=aqueduct.RawCodec(), session_ticket_store=store)
    reply_tx, reply_rx = aqueduct.channel()
    await conn.entrypoint.send(aqueduct.RawMessage(b"hello", [reply_tx]))
    await reply_rx.recv()
    echo_ms = (time.perf_counter() - start) * 1000
    handshake = await link_of(conn).protocol.handshake  # done by now: the echo needed it
    if store is not None:  # keep the connection until its ticket arrived (it can trail a fast 0-RTT echo)
        await asyncio.wait_for(store.arrived.wait(), 5)
    await conn.close()
    return echo_ms, handshake.early_data_accepted


async def main(rounds: int, single_use: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_dev_certs(tmp)
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from aqueduct.cli import main; sys.exit(main())", "serve", "--echo",
             "--port", "0", "--cert", str(certs.cert), "--key", str(certs.key),
             *(["--single-use-tickets"] if single_use else [])],
            stdout=subprocess.PIPE, text=True,
        )
        try:
            assert proc.stdout is not None
            url = "aqueduct://" + proc.stdout.readline().strip().removeprefix("listening on ")
            await one(url, certs, None)  # warm-up (imports, first-use costs)
            full = [(await one(url, certs, None))[0] for _ in range(rounds)]
            store = WaitableTickets()
            await one(url, certs, store)  # obtain the first ticket
            zero, accepted = [], 0
            for _ in range(rounds):
                echo_ms, ok = await one(url, certs, store)
                zero.append(echo_ms)
                accepted += ok
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    return {
        "rounds": rounds,
        "server_single_use_tickets": single_use,
        "first_echo_1rtt_ms_median": round(statistics.median(full), 2),
        "first_echo_0rtt_ms_median": round(statistics.median(zero), 2),
        "zero_rtt_accepted": f"{accepted}/{rounds}",
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--single-use-tickets", action="store_true", help="server runs 0-RTT work at once")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.rounds, args.single_use_tickets)), indent=1))
