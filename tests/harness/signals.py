"""`terminal_sigint`: a `preexec_fn` that gives a child process SIGINT as a terminal gives it.

A suite started in the background (`cmd &` in a non-interactive shell, as a script or a CI runner may start it)
runs with SIGINT ignored, which its children inherit; Python then installs no KeyboardInterrupt handler and
asyncio.run no cancellation, so a test that presses Ctrl-C on a child server waits forever. Tests that send
SIGINT start their child with this, as a user's terminal would have.
"""

from __future__ import annotations

import signal


def terminal_sigint() -> None:
    """In the child, before exec: SIGINT back to its default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
