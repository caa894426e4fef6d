"""An installed aqueduct-quic as a user has it: one real connection on the loopback, one message and its reply.

    python scripts/wheel_smoke.py        (with the interpreter of a venv the wheel was installed into)

scripts/check-wheel.sh runs it from a directory outside the checkout. It checks that `aqueduct` was imported
from this interpreter's site-packages (not a checkout), that its wire and engine run compiled (mypyc) unless
AQUEDUCT_PURE is set, and that a client reaches a server on 127.0.0.1 (a free port), sends a message carrying a
reply sender and receives the reply. Certificates come from the installed `aqueduct cert`, in a temporary
directory removed after. Prints one line; any failure is an exception (exit 1).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import aqueduct


async def _round_trip(certs: Path) -> tuple[object, int]:
    handlers: set[asyncio.Task[None]] = set()

    async def handle(conn: aqueduct.Connection) -> None:  # type: ignore[type-arg]
        async for msg in conn.entrypoint:
            async with msg["reply"] as reply:
                await reply.send({"echo": msg["ask"]})

    async with aqueduct.serve("127.0.0.1", 0, cert=str(certs / "cert.pem"), key=str(certs / "key.pem")) as srv:

        async def accept() -> None:
            async for conn in srv:
                task = asyncio.ensure_future(handle(conn))
                handlers.add(task)
                task.add_done_callback(handlers.discard)

        acceptor = asyncio.ensure_future(accept())
        port = srv.address[1]
        async with aqueduct.connect(f"aqueduct://127.0.0.1:{port}", ca=str(certs / "ca.pem")) as conn:
            reply_tx, reply_rx = aqueduct.channel()
            await conn.entrypoint.send({"ask": "ping", "reply": reply_tx})
            got = await asyncio.wait_for(reply_rx.recv(), 60)
        acceptor.cancel()
    return got, port


def main() -> None:
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    platsite = Path(sysconfig.get_paths()["platlib"]).resolve()
    where = Path(aqueduct.__file__).resolve().parent
    assert where.parent in (site, platsite), f"aqueduct imported from {where}, not this venv's site-packages"
    state = aqueduct.compiled()
    pure = os.environ.get("AQUEDUCT_PURE", "") not in ("", "0")
    assert state.active != pure, f"wire and engine: {state}"
    with tempfile.TemporaryDirectory(prefix="aqueduct-smoke.") as tmp:
        certs = Path(tmp)
        subprocess.run([str(Path(sys.executable).with_name("aqueduct")), "cert", "--dir", str(certs)], check=True,
                       capture_output=True, timeout=120)  # fmt: skip
        got, port = asyncio.run(_round_trip(certs))
    assert got == {"echo": "ping"}, got
    print(f"wheel smoke: aqueduct {aqueduct.__version__} from {where}, {state}; "
          f"a message and its reply over 127.0.0.1:{port}")


if __name__ == "__main__":
    main()
