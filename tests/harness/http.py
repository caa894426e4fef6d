"""A plain HTTP server on loopback for the browser tests' pages: `serving(handler)` runs it on a thread and yields
its origin; `quiet_files(directory)` is a handler serving a directory without logging each request."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def quiet_files(directory: Path) -> Callable[..., BaseHTTPRequestHandler]:
    """A handler serving `directory`'s files, silent on stderr."""
    return functools.partial(_Quiet, directory=str(directory))


@contextlib.contextmanager
def serving(handler: Callable[..., BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` served on 127.0.0.1 (a free port) on a thread; yields "http://127.0.0.1:PORT", stops it after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
