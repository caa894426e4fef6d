"""`aqueduct.run(main())`: asyncio.run for a program that serves until it is stopped.

Theory of operation. `asyncio.run` turns Ctrl-C into a cancellation of the main task and, once the task
has ended, raises KeyboardInterrupt, whose traceback (the CancelledError inside it, then the interrupt) is
some 25 lines for what is the ordinary way to stop a server. `run` is asyncio.run plus two things: SIGTERM
(what a service manager or container sends) cancels the main task too, so `serve` and `connect` leave their
`async with` blocks and close their connections either way; and a program stopped so ends with one line on
stderr (`stopped: Ctrl-C` or `stopped: SIGTERM`) and the shell's exit status for that signal (130, 143).
Any other exception propagates as asyncio.run lets it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Coroutine
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T], *, debug: bool | None = None) -> T:
    """Run `main` as `asyncio.run` does; Ctrl-C or SIGTERM cancels it and ends the program with one line.

    The cancellation unwinds `main` (so `async with aqueduct.serve(...)` closes its connections), then
    `stopped: Ctrl-C` (or `stopped: SIGTERM`) goes to stderr and the process exits with status 130 (143)."""
    terminated = False

    async def guarded() -> T:
        nonlocal terminated
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def on_sigterm() -> None:
            nonlocal terminated
            terminated = True
            task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # (no signals here: not main)
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        try:
            return await main
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGTERM)

    try:
        return asyncio.run(guarded(), debug=debug)
    except KeyboardInterrupt:
        _stopped("Ctrl-C", 130)
    except asyncio.CancelledError:
        if not terminated:
            raise
        _stopped("SIGTERM", 128 + signal.SIGTERM)


def _stopped(how: str, status: int) -> NoReturn:
    print(f"stopped: {how}", file=sys.stderr, flush=True)
    raise SystemExit(status)
