"""A client process for tests/services/test_queued_calls.py: connects with the Calculator interface, starts
`wait("k")` (which the server holds), prints "waiting", and on a line of stdin sends N raw `add` calls (as a
hostile peer builds them) that the server must queue, prints "sent", then waits for stdin to close.

    python -m tests.services.queued_calls_client PORT CA N
"""

from __future__ import annotations

import asyncio
import sys

import aqueduct
from aqueduct.api.request import request
from aqueduct.services.interface import interface_of
from tests.services.calc import Calculator

ADD = interface_of(Calculator).methods["add"]


async def main(port: int, ca: str, n: int) -> None:
    loop = asyncio.get_running_loop()
    async with aqueduct.connect(f"aqueduct://127.0.0.1:{port}", ca=ca, service=Calculator,
                                connect_timeout=60) as conn:
        waiting = asyncio.ensure_future(conn.service.wait("k"))
        print("waiting", flush=True)
        await loop.run_in_executor(None, sys.stdin.readline)
        calls = [asyncio.ensure_future(request(conn.entrypoint, lambda r: ADD.call(reply=r, meta=None, a=1, b=1)))
                 for _ in range(n)]
        print("sent", flush=True)
        await loop.run_in_executor(None, sys.stdin.read)
        for task in (waiting, *calls):
            task.cancel()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
