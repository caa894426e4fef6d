"""Instructions per fresh-oneshot request, both ends in one process: a deterministic figure for a busy machine.

    valgrind --tool=callgrind .venv/bin/python benchmarks/channel_instructions.py --calls N

A server (`serve(..., entrypoint=Add)`, answering each request on its reply oneshot) and a client
(`aqueduct.services.connect`, `aqueduct.request(target, lambda r: Add(1, 2, r))`: a new channel per call) run on
one loop over a real loopback UDP connection; after `--warmup` calls, `--calls` more are made with `--flight` in
flight. Run it under callgrind twice with different `--calls` (the `instructions` script below does) and divide
the difference of the total instruction counts by the difference of the calls: the start-up, the warm-up and
the ending cancel out, what is left is what one call costs both ends (client + server), in instructions.

The loop runs on a virtual clock (`VirtualClockLoop`): each loop turn takes `--step` seconds (100 us: about what
a turn of this exchange costs in CPU, ~8 turns and ~0.7 ms per call on this machine), and a loop with nothing
ready jumps to its next timer. Under callgrind a program runs ~50 times slower, on a loaded machine unevenly, and
what the adapter and aioquic do depends on time (the pacer, delayed ACKs, loss timers): on the wall clock two runs
of the same code differed by 5%. On the virtual clock the same code takes the same loop turns and counts
nearly the same instructions. (Until 2026-11-29 the loop turned while `serve()`'s address lookup ran in the
executor's thread, a number of turns that depended on that thread, and same-code runs differed by up to 5%
at 1 in flight; it now waits for the thread.) The step matters: with 1 us turns aioquic's pacer holds back
nearly every second packet, which no real run sees. `--wall-clock` runs on the real clock.

    .venv/bin/python benchmarks/channel_instructions.py --instructions [--flight 1] [--calls 100 300]

runs the two callgrind runs itself (valgrind must be installed: scripts/setup-system.sh does not) and prints the
per-call figure. PYTHONHASHSEED is fixed so that two runs hash alike. `--untyped` runs the same exchange
untyped: a server and client with the raw codec, the request a `RawMessage` (8 bytes and the reply oneshot),
the reply bytes; the difference to the default is what the typed message (CBOR, msgspec's check and
conversion, the half typed on arrival) costs a call. tests/bench/test_channel_instructions.py proves, counting
on the server's side, that in both variants every call is a request with a new reply channel, answered.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from aqueduct import OneshotSender, serve
from aqueduct.api.codec import RawCodec, RawMessage
from aqueduct.api.request import request
from aqueduct.bench.tally import Tally
from aqueduct.quic.certs import make_dev_certs
from aqueduct.services import connect

SCRATCH = Path(__file__).resolve().parents[1] / ".cache"
"""Where the certificates and callgrind's output go while it runs (the repository's ignored folder)."""


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock moves `step` seconds per turn and jumps to the next timer when nothing is ready
    (its selector never blocks, but where asyncio's would block for good: with no timer and nothing ready, only
    another thread can wake it, such as the executor's address lookup of `serve()`, and it waits for that as
    asyncio does; a loop that turned meanwhile would count a number of turns that depends on the thread)."""

    def __init__(self, step: float = 1e-4) -> None:
        super().__init__()
        self.now = 0.0
        self.step = step
        self.turns = 0
        """Loop turns run so far (the same run takes the same number: tests/bench/test_channel_instructions.py)."""
        selector: Any = self._selector  # type: ignore[attr-defined]
        poll = selector.select

        def select(timeout: float | None = None) -> Any:
            ready = poll(0)
            if ready:
                return ready
            if timeout is None:  # (nothing ready, no timer: only another thread can wake the loop, e.g. the
                return poll(None)  # executor's address lookup of serve(); wait for it as asyncio does, not spin)
            scheduled: Any = self._scheduled  # type: ignore[attr-defined]
            if scheduled and not self._ready:  # type: ignore[attr-defined]
                self.now = max(self.now, scheduled[0].when())
            return ready

        selector.select = select

    def time(self) -> float:
        """The virtual clock."""
        return self.now

    def _run_once(self) -> None:
        self.now += self.step
        self.turns += 1
        super()._run_once()  # type: ignore[misc]


class Add(msgspec.Struct):
    """A typed request answered on its reply oneshot (as benchmarks/services.py's service rows make them)."""

    a: int
    b: int
    reply: OneshotSender[int]


TWO = (1).to_bytes(4, "big") + (2).to_bytes(4, "big")
"""The untyped request's body: the two numbers, four bytes each."""


def _untyped_request(reply: Any) -> Any:
    """The untyped request: its body and its reply oneshot attached (untyped: no reply type to infer)."""
    return RawMessage(TWO, [reply])


async def run(certs: Path, warmup: int, calls: int, flight: int, typed: bool = True,
              tally: Tally | None = None) -> None:
    """Serve, connect, make `warmup` then `calls` requests (`flight` at a time), close. `tally` (the test's)
    counts on the server's side: the connection, each request's reply half as it arrives, each call answered."""
    ends: dict[str, Any] = {"entrypoint": Add} if typed else {"codec": RawCodec()}
    async with serve("127.0.0.1", 0, cert=certs / "cert.pem", key=certs / "key.pem", **ends) as server:
        answering: set[asyncio.Future[None]] = set()

        async def answer(conn: Any) -> None:
            if tally is not None:
                tally.connected(conn)
            async for req in conn.entrypoint:
                if tally is not None:  # (each half a new channel the client opened: typed, the `reply` field)
                    tally.channels += 1 if typed else len(req.attachments)
                if typed:
                    await req.reply.send(req.a + req.b)
                else:
                    data, (reply,) = req.data, req.attachments
                    total = int.from_bytes(data[:4], "big") + int.from_bytes(data[4:], "big")
                    await reply.send(total.to_bytes(4, "big"))
                if tally is not None:
                    tally.calls += 1

        async def accept() -> None:
            async for conn in server:
                answering.add(asyncio.ensure_future(answer(conn)))

        acceptor = asyncio.ensure_future(accept())
        conn = await connect(f"aqueduct://127.0.0.1:{server.address[1]}", ca=certs / "ca.pem", **ends)
        target: Any = conn.entrypoint  # (typed or not, by `ends`)
        three = (3).to_bytes(4, "big")

        async def caller(n: int) -> None:
            for _ in range(n):
                if typed:
                    assert await request(target, lambda r: Add(1, 2, r)) == 3
                else:
                    answer: Any = await request(target, _untyped_request)
                    assert answer.data == three

        await asyncio.gather(*(caller(warmup // flight) for _ in range(flight)))
        await asyncio.gather(*(caller(calls // flight) for _ in range(flight)))
        await conn.close()
        acceptor.cancel()
        for task in answering:
            task.cancel()


def instructions(flight: int, counts: tuple[int, int], warmup: int, step: float, wall_clock: bool = False,
                 typed: bool = True) -> float:
    """Instructions per call: two callgrind runs, `counts` calls each after the warm-up."""
    totals = []
    SCRATCH.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        for n in counts:
            out = Path(tmp) / f"cg.{n}"
            env = {**os.environ, "PYTHONHASHSEED": "0"}
            done = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
                 "--calls", str(n), "--flight", str(flight), "--warmup", str(warmup), "--step", str(step),
                 *(["--wall-clock"] if wall_clock else []), *([] if typed else ["--untyped"])],
                env=env, capture_output=True, text=True, check=True)
            found = re.search(r"Collected : (\d+)", done.stderr)
            assert found is not None, done.stderr[-2000:]
            totals.append(int(found.group(1)))
    return (totals[1] - totals[0]) / (counts[1] - counts[0])


def main() -> None:
    """Command-line entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, nargs="+", default=[100, 300])
    ap.add_argument("--warmup", type=int, default=64)
    ap.add_argument("--flight", type=int, default=1)
    ap.add_argument("--instructions", action="store_true", help="run under callgrind twice and print per call")
    ap.add_argument("--wall-clock", action="store_true", help="the loop on the real clock (see the module comment)")
    ap.add_argument("--step", type=float, default=1e-4, help="seconds of the virtual clock per loop turn")
    ap.add_argument("--untyped", action="store_true", help="the raw codec and bytes (see the module comment)")
    args = ap.parse_args()
    if args.instructions:
        per_call = instructions(args.flight, (args.calls[0], args.calls[-1]), args.warmup, args.step, args.wall_clock,
                                typed=not args.untyped)
        kind = "untyped" if args.untyped else "typed"
        print(f"{per_call:,.0f} instructions per {kind} call (client + server), {args.flight} in flight")
        return
    SCRATCH.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        make_dev_certs(tmp)
        loop = asyncio.new_event_loop() if args.wall_clock else VirtualClockLoop(args.step)
        try:
            loop.run_until_complete(run(Path(tmp), args.warmup, args.calls[0], args.flight, typed=not args.untyped))
        finally:
            loop.close()


if __name__ == "__main__":
    main()
