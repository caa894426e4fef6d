"""aioquic's internals stay in aqueduct/quic/: every other module asks quic/introspect.py.

Checked on the syntax tree of every module outside aqueduct/quic/, per package (aqueduct, aeron_compat):
- no import of an aioquic module or name that is private (`aioquic._buffer`, `from aioquic.x import _y`);
- aioquic's public API is imported only by the benchmark's raw-aioquic baselines (RAW_AIOQUIC): the rest of
  the library reaches QUIC through the adapter;
- no read or write of an attribute aioquic keeps private (every `self._x` in aioquic's source), spelled as
  an attribute or as a string in getattr/setattr/hasattr, `self` included (a subclass of aioquic's protocol
  reading its `_quic` still reaches in). A name our own classes also give their instances (`_buffer`,
  `_transport`) is allowed on `self` and on other objects, except the well-known aioquic ones
  (AIOQUIC_ONLY: `_quic`, `_loss`, `_streams`, ...), which are flagged on any object but `self`.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import aioquic
import pytest

import aeron_compat
import aqueduct

PACKAGES = {"aqueduct": Path(aqueduct.__file__).parent, "aeron_compat": Path(aeron_compat.__file__).parent}
QUIC = PACKAGES["aqueduct"] / "quic"
RAW_AIOQUIC = {"aqueduct/bench/clients.py", "aqueduct/bench/rawquic.py", "aqueduct/bench/peer.py"}
"""The benchmark's raw aioquic client and peer: aioquic's public API is what they measure."""
AIOQUIC_ONLY = frozenset({
    "_quic", "_loss", "_network_paths", "_datagrams_pending", "_rtt_smoothed", "_rtt_min", "_rtt_initialized",
    "_cc", "_on_packets_lost", "_original_destination_connection_id", "_remote_max_datagram_frame_size",
    "_spaces", "_streams", "_streams_blocked_uni", "_events", "_is_client",
})
"""aioquic's attributes flagged on any object but `self` even where a class of ours has one so named (on
`self` they are flagged unless it does)."""


@cache
def _aioquic_private_names() -> frozenset[str]:
    """Every `self._x` aioquic's own source assigns or reads."""
    names: set[str] = set()
    for path in Path(aioquic.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                names.add(node.attr)
    return frozenset(names)


def _modules(package: str) -> list[Path]:
    root = PACKAGES[package]
    return sorted(p for p in root.rglob("*.py") if QUIC not in p.parents)


def aioquic_reaches(tree: ast.AST, raw_allowed: bool, private: frozenset[str], ours: frozenset[str]) -> list[str]:
    """What a module's syntax tree does with aioquic that it should leave to aqueduct/quic/ (`private`: aioquic's
    private attribute names; `ours`: those our own classes define too, allowed on `self`)."""
    anywhere = private | AIOQUIC_ONLY
    elsewhere = (private - ours) | AIOQUIC_ONLY  # on objects but self: ours may share a name with aioquic
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if module != "aioquic" and not module.startswith("aioquic."):
                    continue
                names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
                if any(part.startswith("_") for part in module.split(".")) or any(n.startswith("_") for n in names):
                    found.append(f"line {node.lineno}: imports aioquic internals ({module})")
                elif not raw_allowed:
                    found.append(f"line {node.lineno}: imports {module} (reach QUIC through aqueduct.quic)")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            on_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if node.attr in ((anywhere - ours) if on_self else elsewhere):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2):
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value in elsewhere:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@cache
def _our_names() -> frozenset[str]:
    """Attribute names our own classes (outside aqueduct/quic/) set on `self`: a `_buffer` of ours is not aioquic's."""
    ours = set()
    for pkg in PACKAGES:
        for path in _modules(pkg):
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                        and isinstance(node.ctx, ast.Store)):
                    ours.add(node.attr)
    return frozenset(ours)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_module_outside_quic_reaches_into_aioquic(package: str) -> None:
    private, ours = _aioquic_private_names(), _our_names()
    root = PACKAGES["aqueduct"].parent
    problems = {}
    for path in _modules(package):
        rel = str(path.relative_to(root))
        found = aioquic_reaches(ast.parse(path.read_text()), rel in RAW_AIOQUIC, private, ours)
        if found:
            problems[rel] = found
    assert problems == {}


def test_the_check_catches_what_it_forbids() -> None:
    private = _aioquic_private_names()
    assert {"_loss", "_streams", "_network_paths"} <= private
    bad = ast.parse(
        "from aioquic._buffer import Buffer\n"
        "from aioquic.quic.connection import QuicConnection\n"
        "rtt = conn.protocol.quic._loss._rtt_smoothed\n"
        "q = self._quic\n"
        "n = len(quic._streams)\n"
        "cid = getattr(quic, '_original_destination_connection_id', None)\n"
    )
    ours = frozenset({"_buffer", "_streams"})
    found = aioquic_reaches(bad, False, private, ours)
    assert [f.split(":")[0] for f in found].count("line 3") == 2
    assert {f.split(":")[0] for f in found} == {f"line {n}" for n in range(1, 7)}
    assert aioquic_reaches(ast.parse("from aioquic.quic.connection import QuicConnection\n"), True, private, ours) == []
    assert aioquic_reaches(ast.parse("self._buffer = b''\nn = len(self._streams)\n"), False, private, ours) == []
    assert aioquic_reaches(ast.parse("n = len(self._streams)\n"), False, private, frozenset()) != []
