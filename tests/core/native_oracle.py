"""What the wire and the engine do with a fixed set of inputs, as one digest: run in a process of each mode
(compiled and AQUEDUCT_PURE=1) by tests/core/test_native.py, the pure-Python modules being the oracle.

    python tests/core/native_oracle.py SEEDS [DUMP]

Prints one JSON object: the mode this process chose (`aqueduct.native.compiled()`), the file each compiled
module was loaded from, and the SHA-256 of everything observed (DUMP: also written there, one line each;
values compared as `plain` makes them):

- the random driver (aqueduct.testing.driver) on SEEDS seeds, half with ghosts, through engines that log every
  `commands()`, `events()`, `next_deadline()` and `state_sizes()` answer (an Engine subclass: the compiled
  Engine allows interpreted subclasses), and each run's violations and stats;
- every golden vector of specs/vectors/aqueduct-wire.json decoded (`decode_kind`), then 20 seeded mutations of
  each (bytes flipped, cut, inserted): the frames decoded or the error's type, code and message;
- each vector's frames fed to a FrameReader in seeded random chunks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import random
import re
import sys
from pathlib import Path
from typing import Any, cast

from aqueduct.core.app import AppEvent
from aqueduct.core.config import EngineConfig
from aqueduct.core.engine import Engine
from aqueduct.core.transport import TransportCommand
from aqueduct.native import MODULES, compiled
from aqueduct.testing.driver import Run, config_for, draw
from aqueduct.testing.endpoint import DrivenEngine
from aqueduct.wire.channel_id import Side
from aqueduct.wire.errors import ProtocolError
from aqueduct.wire.reader import FrameReader
from aqueduct.wire.vectors import decode_kind

ROOT = Path(__file__).resolve().parents[2]


_CHANNEL_ID = re.compile(r"ChannelId\((\d+):[^)]*\)")


def plain(value: object) -> object:
    """`value` with every int subclass (ChannelId, IntEnum codes) as its int: compiled code keeps a value of an
    `int`-annotated field or variable as a plain int (same value, a bare number in reprs and messages)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return _CHANNEL_ID.sub(r"\1", value)
    if isinstance(value, list | tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, dict):
        return tuple((plain(k), plain(v)) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, *(plain(getattr(value, f.name)) for f in dataclasses.fields(value)))
    return value


class _Log:
    def __init__(self, dump: str | None) -> None:
        self.sha = hashlib.sha256()
        self.dump = open(dump, "w") if dump else None  # (closed at exit)

    def add(self, *items: object) -> None:
        line = repr(plain(items))
        self.sha.update(line.encode() + b"\n")
        if self.dump is not None:
            self.dump.write(line + "\n")


def _engine_factory(log: _Log, config: EngineConfig) -> Any:
    class Logged(Engine):
        def commands(self) -> list[TransportCommand]:
            out = super().commands()
            log.add("commands", self.side.name, out)
            return out

        def events(self) -> list[AppEvent]:
            out = super().events()
            log.add("events", self.side.name, out)
            return out

        def next_deadline(self) -> float | None:
            out = super().next_deadline()
            log.add("deadline", self.side.name, out)
            return out

    def make(side: Side) -> DrivenEngine:
        return cast(DrivenEngine, Logged(side, headers=[("driver", side.name.encode())], config=config))

    return make


def _outcome(f: Any, *args: Any) -> object:
    try:
        return f(*args)
    except ProtocolError as e:
        return ("ProtocolError", int(e.code), str(e))
    except (ValueError, OverflowError) as e:
        return (type(e).__name__, str(e))


def engine_runs(log: _Log, seeds: int) -> None:
    for seed in range(seeds):
        ghosts = seed % 2 == 1
        net, script = draw(seed)
        config = config_for(seed, ghosts=ghosts)
        result = Run(seed, script, net, _engine_factory(log, config), config=config).execute()
        log.add("run", seed, result.violations, sorted(result.stats.items()))


def wire_vectors(log: _Log) -> None:
    rng = random.Random(28)
    vectors = json.loads((ROOT / "specs" / "vectors" / "aqueduct-wire.json").read_text())["vectors"]
    for v in vectors:
        data = bytes.fromhex(v["hex"])
        log.add("vector", v["name"], _outcome(decode_kind, v["kind"], data))
        for _ in range(20):
            mutated = bytearray(data)
            op = rng.randrange(3)
            if op == 0 and mutated:
                mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
            elif op == 1 and mutated:
                del mutated[rng.randrange(len(mutated)):]
            else:
                mutated.insert(rng.randrange(len(mutated) + 1), rng.randrange(256))
            log.add("mutated", v["name"], bytes(mutated).hex(), _outcome(decode_kind, v["kind"], bytes(mutated)))
        if v["kind"] == "frames" and v.get("valid"):
            reader = FrameReader()
            pos = 0
            while pos < len(data):
                step = rng.randint(1, 9)
                log.add("feed", v["name"], _outcome(reader.feed, data[pos:pos + step]))
                pos += step


def main() -> None:
    seeds = int(sys.argv[1])
    log = _Log(sys.argv[2] if len(sys.argv) > 2 else None)
    engine_runs(log, seeds)
    wire_vectors(log)
    files = {m: importlib.import_module(m).__file__ for m in MODULES}
    state = compiled()
    print(json.dumps({"active": state.active, "reason": state.reason, "files": files, "digest": log.sha.hexdigest()}))


if __name__ == "__main__":
    main()
