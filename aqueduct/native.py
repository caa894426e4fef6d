"""Compiled hot modules: which exist, whether they match the sources, and loading them instead of the .py files.

Theory of operation. The message path's own Python time is the wire codec, the sans-I/O engine and the
adapter's writes to aioquic (`MODULES`). The one build (build_backend/mypyc_build.py: run by every wheel build
where a C compiler is, and in a checkout by scripts/build-compiled.py, which scripts/setup.sh runs) compiles them
with mypyc into `aqueduct/_compiled/`: one shared library (`GROUP`) and one small extension module per compiled
module, plus `manifest.json` naming each built file and the SHA-256 of every source the build read (`sources()`:
all of aqueduct/wire, aqueduct/core and aqueduct/errors.py, and the adapter's `ADAPTER_SOURCES`). A wheel built
without a compiler carries instead a manifest that says why (`{"not_built": why}`). The build loads this file
alone, not through the package, so it imports only the standard library. The .py files are never replaced:
they stay the source of truth, what mypy checks, and the oracle the compiled build is tested against
(tests/core/test_native.py).

`install()` runs first in `aqueduct/__init__.py`, before any of those modules is imported. It puts a
finder at the front of `sys.meta_path` that answers for exactly the compiled modules, pointing each at its
built extension, when all of these hold: AQUEDUCT_PURE is unset (or "0"), the manifest exists, it was
built for this interpreter (the extension suffix), and the tree's sources hash to what was compiled (any
edit since the build means the pure modules; the compiled ones are never mixed with newer sources). Every
other case imports the .py files as usual, and `compiled()` says which was chosen and why. AQUEDUCT_PURE
is read once per process; subprocesses inherit it.

No I/O beyond reading the manifest and the sources inside the package; no asyncio (the engine's no-I/O
import rule holds: tests/core/test_no_io.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, ModuleSpec
from importlib.util import spec_from_file_location
from pathlib import Path
from types import ModuleType
from typing import Any

MODULES: tuple[str, ...] = (
    "aqueduct.wire.varint",
    "aqueduct.wire.headers",
    "aqueduct.wire.ranges",
    "aqueduct.wire.frames",
    "aqueduct.wire.reader",
    "aqueduct.core.acks",
    "aqueduct.core.app",
    "aqueduct.core.context",
    "aqueduct.core.engine",
    "aqueduct.core.flow",
    "aqueduct.core.halves",
    "aqueduct.core.incoming",
    "aqueduct.core.intake",
    "aqueduct.core.creation",
    "aqueduct.core.loss",
    "aqueduct.core.minting",
    "aqueduct.core.outbox",
    "aqueduct.core.rangeset",
    "aqueduct.core.receiver",
    "aqueduct.core.receiving",
    "aqueduct.core.sender",
    "aqueduct.core.sending",
    "aqueduct.core.startup",
    "aqueduct.core.streams",
    "aqueduct.core.timers",
    "aqueduct.core.transitions",
    "aqueduct.quic.introspect",
    "aqueduct.quic.writes",
)
"""The compiled modules (the one list: the build reads it too): the wire codec, the engine, and of the QUIC
adapter the code every message write runs (writes.py's joined writes and backpressure checks, and the aioquic
figures they read, introspect.py). Left out, each kept a Python module:
- the packages' __init__ files and wire/vectors.py (the test vectors' reader: cold);
- wire/errors.py: the error classes, which applications subclass;
- core/transport.py: the engine's commands and events, so an IntEnum code in an `int` field keeps its name;
- core/config.py: `EngineConfig` is public, and a compiled dataclass turns the class attributes that
  `EngineConfig.ack_delay` reads (the defaults) into descriptors;
- the adapter's classes (quic/protocol.py, aioquic_*.py): they subclass aioquic's, which are Python classes, so
  mypyc would compile them as Python classes (`native_class=False`), whose compiled methods refuse an instance
  of a subclass (WebTransport's protocol subclasses AqueductProtocol, the differential test PacedQuicConnection);
  decision PERF-51;
- wire/channel_id.py (`ChannelId` is an int) and core/queue.py (`MessageQueue` is a deque): mypyc builds no
  native subclass of a built-in type, and compiled code takes an `X | None` of a class kept as a Python class
  (`mypyc_attr(native_class=False)`) for true whenever it is not None, which an empty queue is not.
`Engine` (core/engine.py) allows interpreted subclasses (`mypyc_attr`): the testing driver's planted bugs
and the oracle's logging engine subclass it. (As a Python class, `native_class=False`, its compiled methods
refuse a subclass's instance.) Nothing compiled takes a method patched on an instance: tests that do are
marked `pure_python`.
A compiled function checks its arguments' annotated types, so what the engine accepts beyond them (a
bytearray payload) is annotated (`Engine.send`), and an `int`-annotated value that was an int subclass
(a ChannelId, an IntEnum code) comes out of compiled code as a plain int of the same value: fields that
promise more are annotated so (`Attachment.channel`, reset codes).
"""

DISTRIBUTION = "aqueduct-quic"
"""The distribution's name on the package index (the import name is `aqueduct`): here because the advice below
names it and the build (build_backend/) reads this file alone."""
GROUP = "aqueduct._native"
"""mypyc's group name: the shared library is the module `aqueduct._native__mypyc`."""
DIRNAME = "_compiled"
MANIFEST = "manifest.json"
PURE_ENV = "AQUEDUCT_PURE"

_PACKAGE = Path(__file__).resolve().parent


def ext_suffix() -> str:
    """This interpreter's extension-module suffix (e.g. `.cpython-311-x86_64-linux-gnu.so`)."""
    return EXTENSION_SUFFIXES[0]


def source_path(module: str) -> str:
    """The source file of a module of this package, relative to the repository root."""
    return module.replace(".", "/") + ".py"


ADAPTER_SOURCES: tuple[str, ...] = ("quic/introspect.py", "quic/settings.py", "quic/writes.py")
"""The adapter's files a build reads: its compiled modules and what they import of the package (settings.py's
TransportSettings, whose fields writes.py reads)."""


def sources(package: Path = _PACKAGE) -> list[Path]:
    """Every source a build reads: the wire, the engine, the errors and the adapter's compiled modules (compiled
    or imported by what is)."""
    return sorted([*package.glob("wire/*.py"), *package.glob("core/*.py"), package / "errors.py",
                   *(package / rel for rel in ADAPTER_SOURCES)])


def _stat(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_mtime_ns, st.st_size]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _source_paths(package: Path) -> dict[str, Path]:
    return {str(p.relative_to(package)): p for p in sources(package)}


def current_manifest(package: Path = _PACKAGE) -> dict[str, Any]:
    """The manifest a build of the tree as it is now would write (without its `files`): each source's SHA-256,
    and its modification time and size, which let a later check skip hashing a file that kept both (as git)."""
    paths = _source_paths(package)
    return {
        "ext_suffix": ext_suffix(),
        "modules": list(MODULES),
        "sources": {rel: _sha256(p) for rel, p in paths.items()},
        "stats": {rel: _stat(p) for rel, p in paths.items()},
    }


def _read_manifest(package: Path) -> dict[str, Any] | None:
    try:
        return json.loads((package / DIRNAME / MANIFEST).read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


def stale_reason(package: Path = _PACKAGE) -> str | None:
    """Why the compiled modules in `package` cannot be used with its sources (None: they can)."""
    return _usable(package)[1]


def _usable(package: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The build's manifest, read once, and why it cannot be used with the sources (None: it can)."""
    manifest = _read_manifest(package)
    if manifest is None:
        return None, f"not built: {_how_to_build(package)}"
    if "not_built" in manifest:  # a wheel built where none could be compiled (build_backend/aqueduct_build.py)
        return None, f"not built when this was installed: {manifest['not_built']}; {_how_to_build(package)}"
    return manifest, _stale(manifest, package)


def _how_to_build(package: Path) -> str:
    """What builds the compiled modules for this install: a checkout's script, else a reinstall from source."""
    if (package.parent / "scripts" / "build-compiled.py").is_file():
        return "scripts/setup.sh builds them"
    return (f"with a C compiler and Python's headers, `pip install --force-reinstall --no-deps --no-cache-dir "
            f"--no-binary {DISTRIBUTION} {DISTRIBUTION}` builds them")


def _stale(manifest: dict[str, Any], package: Path) -> str | None:
    if manifest.get("ext_suffix") != ext_suffix():
        return f"built for another interpreter, {manifest.get('ext_suffix')}"
    if manifest.get("modules") != list(MODULES) or not isinstance(manifest.get("files"), dict):
        return "built for another module list"
    built, stats = manifest.get("sources") or {}, manifest.get("stats") or {}
    paths = _source_paths(package)
    edited = {rel for rel, p in paths.items()
              if rel in built and stats.get(rel) != _stat(p) and _sha256(p) != built[rel]}
    changed = sorted(({*built} ^ {*paths}) | edited)  # (added or removed, or edited)
    if changed:
        return f"older than the sources: {', '.join(changed[:3])}{', ...' if len(changed) > 3 else ''} changed"
    missing = [name for name, f in manifest["files"].items() if not (package / DIRNAME / f).is_file()]
    if missing:
        return f"incomplete: {missing[0]} missing"
    return None


@dataclass(frozen=True)
class CompiledState:
    """Which implementation this process runs: `aqueduct.compiled()`."""

    active: bool
    """True: the modules below were loaded from their mypyc-compiled extensions."""
    modules: tuple[str, ...]
    """The compiled modules in use (empty when pure)."""
    reason: str
    """In words: compiled, or why pure (AQUEDUCT_PURE set, none built, older than the sources, ...)."""

    def __str__(self) -> str:
        return self.reason


class _Finder:  # (a meta path finder: importlib.abc.MetaPathFinder's protocol, without importing it)
    """Answers for the compiled modules only, each with its built extension."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(self, fullname: str, path: Any = None, target: ModuleType | None = None) -> ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None:
            return None
        return spec_from_file_location(fullname, file, loader=ExtensionFileLoader(fullname, str(file)))


_state: CompiledState | None = None


def install(package: Path = _PACKAGE) -> CompiledState:
    """Choose compiled or pure for this process (once; later calls return the first choice)."""
    global _state
    if _state is not None:
        return _state
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        _state = CompiledState(False, (), f"pure Python ({PURE_ENV}={os.environ[PURE_ENV]})")
        return _state
    manifest, why = _usable(package)
    loaded = [m for m in MODULES if m in sys.modules]
    if why is None and loaded:  # (imported before aqueduct/__init__.py could choose: cannot happen via import)
        why = f"not used: {loaded[0]} was imported first"
    if why is not None or manifest is None:
        _state = CompiledState(False, (), f"pure Python (compiled modules {why})")
        return _state
    files = {name: package / DIRNAME / f for name, f in manifest["files"].items()}
    sys.meta_path.insert(0, _Finder(files))
    _state = CompiledState(True, MODULES,
                           f"compiled (mypyc: {len(MODULES)} modules of the wire, the engine and the adapter)")
    return _state


def compiled() -> CompiledState:
    """Whether this process runs the mypyc-compiled wire codec and engine, which modules, or why not.

    `aqueduct --version` and `aqueduct bench` print it. The compiled modules are built with the wheel (and in a
    checkout by scripts/setup.sh) when a C compiler is available; AQUEDUCT_PURE=1 in the environment runs the
    pure-Python modules even then."""
    return install()
