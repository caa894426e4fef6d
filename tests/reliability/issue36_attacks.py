"""Issue 36's service attacks, rerun against a real server process while a good client calls on another
connection (each attack in a process of its own): prints, per attack, the server's resident memory before,
at its peak and after, and the good client's worst call latency during it. Loopback only, bounded loops;
a figures script, not a test.

    .venv/bin/python tests/reliability/issue36_attacks.py

The server (this file with `--serve`) serves tests/services/calc.py's Calc with its defaults, plus a method
whose exception text is 17 MB; the attacker builds its calls as a hostile peer would (raw call structs).
"""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import aqueduct
from aqueduct.api.request import request
from aqueduct.quic.certs import make_dev_certs
from aqueduct.services.interface import CallMeta, interface_of
from tests.services.calc import Calc, Calculator, Listener

METHODS = interface_of(Calculator).methods


class Target(Calc):
    async def fail(self, text: str) -> None:
        raise ValueError(text * 17_000_000 if text == "x" else text)


async def serve(cert: str, key: str) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=cert, key=key, service=Target()) as server:
        print(server.address[1], flush=True)
        await asyncio.Event().wait()


def rss(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


class CallsBack(Listener):
    def __init__(self, calc: Calculator) -> None:
        self.calc = calc

    async def notify(self, text: str) -> None:
        await self.calc.add(1, 2)


async def raw(conn: Any, method: str, meta: CallMeta | None, **fields: Any) -> Any:
    return await request(conn.entrypoint, lambda r: METHODS[method].call(reply=r, meta=meta, **fields))


async def nan_deadline(conn: Any) -> str:
    replies = await asyncio.gather(*(raw(conn, "wait", CallMeta(timeout=math.nan), key=f"k{i}") for i in range(20)))
    return f"{sum(r.error is not None for r in replies)}/20 refused ({replies[0].error.type})"


async def big_metadata(conn: Any) -> str:
    meta = CallMeta(metadata={str(i): "" for i in range(100_000)})
    replies = await asyncio.gather(*(raw(conn, "wait", meta, key=f"m{i}") for i in range(64)))
    return f"{sum(r.error is not None for r in replies)}/64 refused ({replies[0].error.type})"


async def callbacks(conn: Any) -> str:
    await asyncio.wait_for(asyncio.gather(*(conn.service.subscribe(CallsBack(conn.service)) for _ in range(64))), 30)
    return "64 subscribe(listener) calling back: all answered"


async def huge_exception(conn: Any) -> str:
    try:
        await conn.service.fail("x")
    except aqueduct.RemoteError as exc:
        return f"RemoteError {exc.type_name}, {len(exc.remote_message)} characters"
    return "no error?"


async def queued_then_close(conn: Any) -> str:
    waits = [asyncio.ensure_future(raw(conn, "wait", None, key=f"q{i}")) for i in range(64)]
    adds = [asyncio.ensure_future(raw(conn, "add", None, a=1, b=1)) for _ in range(2000)]
    await asyncio.sleep(1.0)  # (lets the calls reach the server's window; a figures script, not a test)
    await conn.close()
    done = await asyncio.gather(*waits, *adds, return_exceptions=True)
    return f"{sum(isinstance(d, BaseException) for d in done)}/{len(done)} calls ended by the close"


ATTACKS: list[tuple[str, Callable[[Any], Awaitable[str]]]] = [
    ("NaN deadline x20", nan_deadline), ("64 calls x 100k metadata keys", big_metadata),
    ("64 calls calling back", callbacks), ("17 MB exception text", huge_exception),
    ("2064 calls queued, then close", queued_then_close),
]


async def main() -> None:
    with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parents[2] / ".venv") as d:
        certs = make_dev_certs(Path(d))
        proc = subprocess.Popen([sys.executable, __file__, "--serve", str(certs.cert), str(certs.key)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            url = f"aqueduct://127.0.0.1:{int(proc.stdout.readline())}"
            async with aqueduct.connect(url, ca=certs.ca, service=Calculator) as good:
                print(f"{'attack':34} {'RSS before':>10} {'peak':>8} {'after':>8} {'good worst':>11}  outcome")
                for name, _ in ATTACKS:
                    await good.service.add(0, 0)
                    before = peak = rss(proc.pid)
                    worst = 0.0
                    stop = asyncio.Event()

                    async def good_client(stop: asyncio.Event = stop) -> None:
                        nonlocal worst
                        for _ in range(100_000):
                            if stop.is_set():
                                return
                            t0 = time.perf_counter()
                            await asyncio.wait_for(good.service.add(1, 2), 30)
                            worst = max(worst, time.perf_counter() - t0)
                            await asyncio.sleep(0.02)

                    async def sample(stop: asyncio.Event = stop) -> None:
                        nonlocal peak
                        while not stop.is_set():
                            peak = max(peak, rss(proc.pid))
                            await asyncio.sleep(0.05)

                    side = [asyncio.ensure_future(good_client()), asyncio.ensure_future(sample())]
                    attacker = await asyncio.create_subprocess_exec(  # (its own process: its CPU is not ours)
                        sys.executable, __file__, "--attack", name, url, str(certs.ca), stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL)
                    out, _ = await asyncio.wait_for(attacker.communicate(), 120)
                    outcome = (out.decode().strip().splitlines() or ["attacker printed nothing"])[-1]
                    await asyncio.sleep(2.0)  # (the server settles after the attacker left)
                    stop.set()
                    await asyncio.gather(*side)
                    after = rss(proc.pid)
                    print(f"{name:34} {before:8.1f}MB {peak:6.1f}MB {after:6.1f}MB {worst * 1000:9.1f}ms  {outcome}",
                          flush=True)
        finally:
            proc.kill()
            proc.wait()


async def attack(name: str, url: str, ca: str) -> None:
    async with aqueduct.connect(url, ca=ca, service=Calculator) as bad:
        try:
            print(await asyncio.wait_for(dict(ATTACKS)[name](bad), 60), flush=True)
        except Exception as exc:
            print(f"attack ended with {type(exc).__name__}: {str(exc)[:80]}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        asyncio.run(serve(sys.argv[2], sys.argv[3]))
    elif sys.argv[1:2] == ["--attack"]:
        asyncio.run(attack(*sys.argv[2:5]))
    else:
        asyncio.run(main())
    os._exit(0)
