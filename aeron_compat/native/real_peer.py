"""A real Aeron peer (pyaeron + its embedded C media driver), run as a script under Python 3.12+.

Theory: interop tests and benchmarks start this file in the pyaeron virtual
environment (see `interop.py`) with one JSON argument naming a role. It
reports JSON lines on stdout and takes line commands on stdin, so the test
process controls it without shared state. Roles:
  sub  - subscribe, report each message's length and CRC32 (at `count`, and
         on the command `report`); `pause_after` stops polling until the
         command `resume`; image (un)availability is reported.
  pub  - publish `count` messages of the given sizes (payload from `message`),
         retrying back pressure; `close` ends the stream.
  pong - echo every message from one channel onto another.
  ping - send `count` messages one at a time and time each echo (RTT).
  blast - offer `count` messages of `size` bytes as fast as possible.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
import zlib
from typing import Any

import pyaeron  # only present in the pyaeron environment


def message(i: int, size: int) -> bytes:
    """The payload of message `i` (identical to the test side's)."""
    head = (i & 0xFFFFFFFF).to_bytes(4, "little")
    return (head * (size // 4 + 1))[:size]


EMPTY: list[int] = []


def emit(**fields: Any) -> None:
    """Report one event line."""
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


_pending = bytearray()


def command(timeout: float = 0.0) -> str | None:
    """The next stdin line if one is ready ("exit" at end of input); unbuffered so select stays truthful."""
    while b"\n" not in _pending:
        ready, _, _ = select.select([sys.stdin.fileno()], [], [], timeout)
        if not ready:
            return None
        chunk = os.read(sys.stdin.fileno(), 4096)
        if not chunk:
            return "exit"
        _pending.extend(chunk)
    line, _, rest = bytes(_pending).partition(b"\n")
    _pending[:] = rest
    return line.decode().strip()


def offer(pub: Any, data: bytes, deadline: float) -> None:
    """Offer until accepted (raises TimeoutError at `deadline`)."""
    while not pub.offer(data):
        if time.monotonic() > deadline:
            raise TimeoutError("offer did not succeed in time")


def run_sub(aeron: Any, cfg: dict[str, Any]) -> None:
    got: list[list[int]] = []
    pause_after = cfg.get("pause_after")
    sub = aeron.add_subscription(
        cfg["channel"], cfg["stream"],
        available_image=lambda _s, img: emit(event="available", session=img.session_id),
        unavailable_image=lambda _s, img: emit(event="unavailable", session=img.session_id),
    )
    emit(event="ready")

    report = cfg.get("report", True)

    def on_message(buf: Any, _header: Any) -> None:
        if report:
            data = bytes(buf)
            got.append([len(data), zlib.crc32(data)])
        else:  # benchmarks: count only, so the figure is the transport's
            got.append(EMPTY)

    count = cfg.get("count", 0)
    paused = False
    first = last = 0.0
    polls = 0
    idle = True
    while True:
        polls += 1
        cmd = command(0.0 if not paused else 0.05) if paused or idle or polls % 256 == 0 else None
        if cmd == "exit":
            break
        if cmd == "resume":
            paused = False
        if cmd == "report":
            emit(event="report", count=len(got), messages=got)
        if paused:
            continue
        before = len(got)
        idle = not sub.poll(on_message, 256)
        if len(got) != before:
            last = time.perf_counter()
            first = first or last
            if before < count <= len(got):
                emit(event="done", messages=got if report else [], elapsed=last - first,
                     count=len(got))
            if pause_after is not None and before < pause_after <= len(got):
                paused = True
                emit(event="paused", count=len(got))
    sub.close()


def run_pub(aeron: Any, cfg: dict[str, Any]) -> None:
    pub = aeron.add_exclusive_publication(cfg["channel"], cfg["stream"])
    emit(event="ready", session=pub.session_id)
    pub.await_connected(cfg.get("connect_timeout", 10.0))
    emit(event="connected", session=pub.session_id)
    deadline = time.monotonic() + cfg.get("timeout", 30.0)
    for i, size in enumerate(cfg["sizes"]):
        offer(pub, message(i, size), deadline)
    emit(event="sent", position=pub.position)
    cmd = None
    while cmd not in ("close", "exit"):
        cmd = command(0.05)
    pub.close()
    emit(event="closed")
    while cmd != "exit":
        cmd = command(0.05)


def run_pong(aeron: Any, cfg: dict[str, Any]) -> None:
    sub = aeron.add_subscription(cfg["channel"], cfg["stream"])
    pub = aeron.add_exclusive_publication(cfg["reply_channel"], cfg["reply_stream"])
    emit(event="ready")
    deadline = time.monotonic() + 3600

    def echo(buf: Any, _header: Any) -> None:
        offer(pub, bytes(buf), deadline)

    idle = 0
    while True:
        if sub.poll(echo, 16):
            idle = 0
            continue
        idle += 1
        os.sched_yield()
        if idle % 1024 == 0 and command() == "exit":
            break
    pub.close()
    sub.close()


def run_ping(aeron: Any, cfg: dict[str, Any]) -> None:
    pub = aeron.add_exclusive_publication(cfg["channel"], cfg["stream"])
    sub = aeron.add_subscription(cfg["reply_channel"], cfg["reply_stream"])
    emit(event="ready")
    pub.await_connected(10.0)
    while not sub.is_connected:
        time.sleep(0.001)
    got: list[int] = []
    samples: list[int] = []
    deadline = time.monotonic() + 60
    payload = bytes(cfg.get("size", 32))
    for i in range(cfg["warmup"] + cfg["count"]):
        start = time.perf_counter_ns()
        offer(pub, payload, deadline)
        while not sub.poll(lambda b, h: got.append(1), 1):
            os.sched_yield()
            if time.monotonic() > deadline:
                raise TimeoutError("no echo")
        if i >= cfg["warmup"]:
            samples.append(time.perf_counter_ns() - start)
    emit(event="done", rtt_ns=samples)


def run_blast(aeron: Any, cfg: dict[str, Any]) -> None:
    pub = aeron.add_exclusive_publication(cfg["channel"], cfg["stream"])
    emit(event="ready", session=pub.session_id)
    pub.await_connected(10.0)
    payload = bytes(cfg.get("size", 32))
    deadline = time.monotonic() + 120
    start = time.perf_counter()
    for _ in range(cfg["count"]):
        offer(pub, payload, deadline)
    emit(event="sent", elapsed=time.perf_counter() - start)
    while command(0.05) not in ("close", "exit"):
        pass
    pub.close()


# One shared driver thread backing off when idle: busy-spinning driver threads starve each other
# when two real peers and this package share a small machine (2 cores here).
DRIVER_ENV = {"AERON_THREADING_MODE": "SHARED", "AERON_SHARED_IDLE_STRATEGY": "backoff"}

ROLES = {"sub": run_sub, "pub": run_pub, "pong": run_pong, "ping": run_ping, "blast": run_blast}


def main() -> None:
    cfg = json.loads(sys.argv[1])
    for key, value in {**DRIVER_ENV, **cfg.get("env", {})}.items():
        os.environ[key] = str(value)
    with pyaeron.Aeron(embedded=True) as aeron:
        ROLES[cfg["role"]](aeron, cfg)
    emit(event="exited")


if __name__ == "__main__":
    main()
