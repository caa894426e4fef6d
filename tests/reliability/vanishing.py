"""Clients that vanish: a subprocess holds N established connections to a server and is then killed.

`python -m tests.reliability.vanishing PORT N CA` opens N raw aioquic connections from 127.0.0.2
(hostile.raw_peer: handshake done, the Aqueduct hello sent and the server's answer read), prints
`ready N`, and keeps every connection alive from its handshake on (a PING every KEEPALIVE seconds).
`vanished_clients(port, n, certs)` runs it and, on leaving, SIGKILLs it: no CONNECTION_CLOSE and no
packet ever again, all at once, which is what a crashed host or a pulled cable looks like to the server.
The server must then end these connections by its idle timeout (or its own close).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from aqueduct.quic.certs import DevCerts

from .hostile import GUARD, RawPeer, raw_peer

BATCH = 25
"""Handshakes in flight at once."""
KEEPALIVE = 0.5
"""Seconds between the PINGs each connection sends until the process is killed."""


async def _hold(port: int, n: int, ca: Path) -> None:
    certs = DevCerts(ca=ca, ca_key=ca, cert=ca, key=ca)  # (a client needs only the CA)
    peers = []
    keepalive = asyncio.ensure_future(_keep_alive(peers))
    for start in range(0, n, BATCH):
        batch = await asyncio.gather(*(raw_peer(port, certs) for _ in range(start, min(n, start + BATCH))))
        for peer in batch:
            peer.hello()
        peers.extend(batch)
    async with asyncio.timeout(GUARD + n / 10):  # (a failure guard)
        while not all(p.received_bytes for p in peers):  # the server answered each hello
            await asyncio.sleep(0.02)
    assert not any(p.is_closed for p in peers)
    print(f"ready {len(peers)}", flush=True)
    await keepalive


async def _keep_alive(peers: list[RawPeer]) -> None:
    """Alive until killed, however short the server's idle timeout: then all vanish at the same moment."""
    while True:
        for peer in peers:
            peer.quic.send_ping(0)
            peer.transmit()
        await asyncio.sleep(KEEPALIVE)


@contextlib.asynccontextmanager
async def vanished_clients(port: int, n: int, certs: DevCerts) -> AsyncIterator[asyncio.subprocess.Process]:
    """N established connections to `port` whose process is SIGKILLed on leaving (see the module)."""
    root = Path(__file__).parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.reliability.vanishing", str(port), str(n), str(certs.ca),
        stdout=asyncio.subprocess.PIPE, cwd=root, env=env)
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 4 * GUARD + n / 10)  # (a failure guard)
        assert line.startswith(b"ready "), f"the vanishing clients did not connect: {line!r}"
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


if __name__ == "__main__":
    asyncio.run(_hold(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])))
