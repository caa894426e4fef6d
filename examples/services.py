"""Typed remote services, two processes: a calculator with a streaming method and a listener callback.

`python services.py` makes throwaway certificates, starts `python services.py server DIR` (a second
process, which prints its port), and calls it as a client: a plain call, a refused argument (nothing
sent), a streaming result, a listener the server calls back, a declared error, and a timeout that
cancels the method on the server. The interface is below; the server implements it, the client holds a
stub that mypy checks as the interface.
"""

from __future__ import annotations

import abc
import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

import aqueduct
from aqueduct import Receiver
from aqueduct.quic.certs import make_dev_certs


class Overflow(Exception):
    """Declared by the interface: a caller gets it as itself (anything else arrives as RemoteError)."""


class Listener(aqueduct.Service):
    @abc.abstractmethod
    async def notify(self, text: str) -> None: ...


class Calculator(aqueduct.Service, errors=[Overflow]):
    @abc.abstractmethod
    async def add(self, a: int, b: int) -> int: ...

    @abc.abstractmethod
    async def count(self, upto: int) -> Receiver[int]: ...   # a streaming result

    @abc.abstractmethod
    async def subscribe(self, listener: Listener) -> None: ...  # a service passed as an argument

    @abc.abstractmethod
    async def slow(self, seconds: float) -> str: ...


# ---- the server process ----
class Calc(Calculator):
    async def add(self, a: int, b: int) -> int:
        if a + b > 2**31:
            raise Overflow(f"{a} + {b} does not fit 32 bits")
        return a + b

    async def count(self, upto: int) -> Receiver[int]:
        tx, rx = aqueduct.channel(int)

        async def feed() -> None:
            async with tx:
                for i in range(upto):
                    await tx.send(i)

        self.feeding = asyncio.ensure_future(feed())
        return rx

    async def subscribe(self, listener: Listener) -> None:
        for text in ("subscribed", "tick 1", "tick 2"):
            await listener.notify(text)  # calls back into the client, over the same connection

    async def slow(self, seconds: float) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            print("server: slow() cancelled: its caller gave up", flush=True)
            raise
        return "done"


async def server(certs_dir: str) -> None:
    certs = Path(certs_dir)
    async with aqueduct.serve("127.0.0.1", 0, cert=certs / "cert.pem", key=certs / "key.pem",
                              service=Calc()) as srv:
        print(srv.address[1], flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the client is done


# ---- the client process ----
class Printer(Listener):
    def __init__(self) -> None:
        self.heard: asyncio.Queue[str] = asyncio.Queue()

    async def notify(self, text: str) -> None:
        print("client: listener heard", repr(text))
        self.heard.put_nowait(text)


async def client(url: str, ca: Path) -> None:
    async with aqueduct.connect(url, ca=ca, service=Calculator) as conn:
        calc = conn.service                                        # mypy: Calculator
        print("client: add(2, 40) =", await calc.add(2, 40))
        try:
            await calc.add("2", 40)  # type: ignore[arg-type]      # mypy rejects it; at run time:
        except aqueduct.ValidationError as exc:
            print("client: not sent:", exc.path, "expected", exc.expected)
        print("client: count(4) streams", [i async for i in await calc.count(4)])
        printer = Printer()
        await calc.subscribe(printer)
        try:
            await calc.add(2**31, 1)
        except Overflow as exc:
            print("client: declared error arrived as itself:", exc)
        try:
            with aqueduct.call_options(timeout=0.2):
                await calc.slow(30)
        except aqueduct.Timeout:
            print("client: slow(30) timed out after 0.2 s")
        print("client: still served: add(1, 1) =", await calc.add(1, 1))


async def main() -> None:
    if sys.argv[1:2] == ["server"]:                  # the second process: this file run as the server
        await server(sys.argv[2])
        return
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_dev_certs(tmp)
        proc = subprocess.Popen([sys.executable, __file__, "server", tmp], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None and proc.stdin is not None
            port = int(proc.stdout.readline())
            await client(f"aqueduct://127.0.0.1:{port}", certs.ca)
            proc.stdin.close()
            for line in proc.stdout:
                print(line, end="")
        finally:
            proc.wait(timeout=30)


if __name__ == "__main__":
    aqueduct.run(main())  # Ctrl-C ends it with one line
