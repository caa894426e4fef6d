"""Goodput against OpenWeaver's C++ receiver (issue 28 item 7): ours -> C++ beside C++ -> C++, same run.

For each loss level (0% and 2%, independent, both ways, through the project's impairment proxy in its own
process, `python -m aqueduct.bench.loss proxy`), a fresh C++ example server receives SIZE bytes twice over:
once from the C++ example client, once from our endpoint (alternating which goes first). The figure is SIZE
over the time from the sender's start (the C++ client's spawn; our dial) to the server's `RECEIVED` line.
The test prints the MB/s and the ratio and asserts only correctness (both transfers arrive intact, SHA-256):
its timing is the loaded machine's. Before the ACK-delay allowance (stream/congestion.py) the C++ side's
25 ms ACK timer held our window at its floor: 0.19-0.23 MB/s against 0.43-1.21 at 2% loss.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import time
from pathlib import Path

from nacl.public import PrivateKey

from aeron_compat.marlin.aio import StreamEndpoint
from tests.stream.openweaver_peer import build, free_udp_port, key_dir
from tests.stream.test_openweaver_interop import pattern

SIZE = int(os.environ.get("OW_GOODPUT_BYTES", "4000000"))
LOSSES = (0.0, 0.02)
GUARD = 300.0


async def _proxy(loss: float, target: int) -> tuple[asyncio.subprocess.Process, int]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aqueduct.bench.loss", "proxy", "--seed", "1", "--losses", str(loss),
        "--target", f"cpp={target}", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    ports = json.loads(await asyncio.wait_for(proc.stdout.readline(), GUARD))
    return proc, int(ports[f"cpp@{loss}"])


async def _received(server: asyncio.subprocess.Process) -> str:
    assert server.stdout is not None
    while line := await server.stdout.readline():
        if line.startswith(b"RECEIVED"):
            return line.decode().strip()
    return ""


async def _one(binaries: Path, keys: Path, secret: PrivateKey, loss: float, ours: bool) -> tuple[float, str]:
    """(MB/s, the server's RECEIVED line) of one transfer to a fresh C++ server through a fresh proxy."""
    port = free_udp_port()
    env = dict(os.environ, OW_LISTEN=f"127.0.0.1:{port}", OW_BYTES=str(SIZE))
    server = await asyncio.create_subprocess_exec(str(binaries / "ow_server"), cwd=keys, env=env,
                                                  stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    proxy, via = await _proxy(loss, port)
    ep = None
    client = None
    try:
        received = asyncio.ensure_future(_received(server))
        start = time.perf_counter()
        if ours:
            ep = await StreamEndpoint.bind(profile="openweaver")
            conn = await asyncio.wait_for(ep.dial(("127.0.0.1", via), bytes(secret.public_key)), GUARD)
            _, writer = conn.open_stream()
            writer.write(pattern(SIZE))
        else:
            cenv = dict(os.environ, OW_DIAL=f"127.0.0.1:{via}", OW_BIND=f"127.0.0.1:{free_udp_port()}",
                        OW_BYTES=str(SIZE))
            client = await asyncio.create_subprocess_exec(str(binaries / "ow_client"), cwd=keys, env=cenv,
                                                          stdout=asyncio.subprocess.DEVNULL,
                                                          stderr=asyncio.subprocess.DEVNULL)
        line = await asyncio.wait_for(received, GUARD)
        return SIZE / (time.perf_counter() - start) / 1e6, line
    finally:
        if ep is not None:
            ep.close()
        for proc in (client, server):
            if proc is not None and proc.returncode is None:
                proc.kill()
                await proc.wait()
        assert proxy.stdin is not None
        proxy.stdin.close()
        await proxy.wait()


def test_we_send_to_the_cpp_receiver_as_fast_as_its_own_client(tmp_path: Path) -> None:
    binaries = build()
    secret = PrivateKey.generate()
    keys = key_dir(tmp_path, bytes(secret))
    expected = f"RECEIVED {SIZE} {hashlib.sha256(pattern(SIZE)).hexdigest()}"

    async def main() -> dict[tuple[float, bool], float]:
        rates = {}
        for i, loss in enumerate(LOSSES):
            for ours in ((True, False) if i % 2 else (False, True)):
                rate, line = await _one(binaries, keys, secret, loss, ours)
                assert line == expected, ("ours" if ours else "C++", loss, line)
                rates[(loss, ours)] = rate
        return rates

    rates = asyncio.run(main())
    for loss in LOSSES:
        cpp, ours = rates[(loss, False)], rates[(loss, True)]
        print(f"\nOPENWEAVER GOODPUT {loss:.0%} loss, {SIZE / 1e6:.0f} MB: C++ -> C++ {cpp:.2f} MB/s, "
              f"ours -> C++ {ours:.2f} MB/s ({ours / cpp:.2f}x)")
