"""benchmarks/browser_bench.py's rows count on the far side: the server's own count of what reached its entrypoint
is exactly what each client sent (a row that lost or invented messages would show here, not as a rate)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "browser_bench.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("browser_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["browser_bench"] = module  # (its dataclass looks its module up there)
    spec.loader.exec_module(module)
    return module


@pytest.mark.requires_system("chromium")
@pytest.mark.requires_system("node")
async def test_every_row_is_counted_by_the_server(chromium: str) -> None:
    from .test_typescript_client import _bundle

    _bundle()  # (built here, under the tests' lock)
    bench = _bench()
    rows = await bench.measure(messages=3000, calls=40, rounds=1, chromium=chromium)
    assert [r.name for r in rows] == ["python-quic", "chromium-raw", "chromium-typescript", "python-quic calls",
                                      "chromium-typescript calls"]
    assert [(r.counted, r.sent) for r in rows] == [(3000, 3000)] * 3 + [(40, 40)] * 2
    assert all(r.seconds > 0 for r in rows)


def test_the_page_gets_the_bytes_a_client_engine_sends() -> None:
    """The browser row's bytes are a real client's: the control stream opens with Version + ConnectionControl and the
    message stream holds exactly the messages sent, each with the 64-byte payload."""
    from aqueduct.api.codec import DEFAULT_CODEC
    from aqueduct.wire.frames import ConnectionControl, Message, Version
    from aqueduct.wire.reader import decode_frames

    bench = _bench()
    ctl, msgs = bench.client_stream_bytes(10)
    assert [type(f) for f in decode_frames(ctl)] == [Version, ConnectionControl]
    frames = [f for f in decode_frames(msgs) if isinstance(f, Message)]
    assert len(frames) == 10 and all(DEFAULT_CODEC.decode(f.payload, []) == bench.PAYLOAD for f in frames)
