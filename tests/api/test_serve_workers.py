"""`aqueduct serve --echo --workers N`: N processes on one port, every client served, SIGTERM ends them all."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import aqueduct
from aqueduct import RawCodec, RawMessage
from aqueduct.quic.certs import DevCerts

CLI = [sys.executable, "-c", "import sys; from aqueduct.cli import main; sys.exit(main())"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.timeout(120)
def test_two_workers_serve_one_port_and_sigterm_ends_both(certs: DevCerts) -> None:
    proc = subprocess.Popen([*CLI, "serve", "--echo", "--host", "127.0.0.1", "--port", "0", "--cert",
                             str(certs.cert), "--key", str(certs.key), "--workers", "2", "--grace", "1"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("listening on 127.0.0.1:")
        second = proc.stdout.readline().strip()
        assert second.startswith("workers: 2 processes sharing the port, pids ")
        pids = [int(p) for p in second.rsplit("pids ", 1)[1].split(", ")]
        assert pids[0] == proc.pid and len(pids) == 2 and _alive(pids[1])
        url = "aqueduct://" + first.removeprefix("listening on ")

        async def clients() -> None:
            async def one(i: int) -> bytes:
                async with aqueduct.connect(url, ca=certs.ca, codec=RawCodec()) as conn:
                    reply_tx, reply_rx = aqueduct.channel()
                    await conn.entrypoint.send(RawMessage(b"hello %d" % i, [reply_tx]))
                    got = await asyncio.wait_for(reply_rx.recv(), 20)
                    return bytes(got.data)

            assert await asyncio.gather(*(one(i) for i in range(16))) == [b"hello %d" % i for i in range(16)]

        asyncio.run(clients())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        rest = proc.stdout.read()
        # 16 connections ended, on either worker; worker 1's lines come relayed with its name
        assert rest.count("ended:") == 16
        assert not _alive(pids[1])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.parametrize("bad", [["--workers", "0"], ["--workers", "2", "--record", "x"],
                                 ["--workers", "2", "--metrics-port", "0"]])
def test_bad_worker_options_exit_2(certs: DevCerts, bad: list[str]) -> None:
    out = subprocess.run([*CLI, "serve", "--echo", "--port", "0", "--cert", str(certs.cert), "--key",
                          str(certs.key), *bad], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.startswith("aqueduct serve: ")
