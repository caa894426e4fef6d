"""aioquic's private state is touched only through the door modules: quic/introspect.py and quic/aioquic_*.py.

An aioquic upgrade that renames a private attribute or method breaks the doors and nothing else. Checked on
the syntax tree of every module of aqueduct (aqueduct/quic/ included) and aeron_compat, the doors aside:
- no import of an aioquic module or name that is private (`aioquic._buffer`, `from aioquic.x import _y`);
- aioquic's public API is imported only by the adapter (aqueduct/quic/) and the benchmark's raw-aioquic
  baselines (RAW_AIOQUIC): the rest of the library reaches QUIC through the adapter;
- no read or write of an attribute or method aioquic keeps private (every `self._x` its source uses and every
  `_x` method it defines), spelled as an attribute or as a string in getattr/setattr/hasattr:
  - on an object but `self`: any such name a class of ours outside the doors does not also give its
    instances (`_buffer`, `_transport` are ours too), and always the well-known aioquic ones (AIOQUIC_ONLY);
  - on `self` in a class that derives from aioquic (through a door's class: AqueductProtocol,
    LimitedQuicServer) or is mixed into one (endings.Endings): any name aioquic's classes it derives from
    use, its own included (one object: a name of ours would be aioquic's), and no override of their private
    methods;
  - on `self` in any other class: an AIOQUIC_ONLY name the class does not define itself.
Every door module is named in ARCHITECTURE.md, which says why it is one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import aioquic
import pytest

import aeron_compat
import aqueduct

PACKAGES = {"aqueduct": Path(aqueduct.__file__).parent, "aeron_compat": Path(aeron_compat.__file__).parent}
QUIC = PACKAGES["aqueduct"] / "quic"
ROOT = PACKAGES["aqueduct"].parent
RAW_AIOQUIC = {"aqueduct/bench/clients.py", "aqueduct/bench/rawquic.py", "aqueduct/bench/peer.py"}
"""The benchmark's raw aioquic client and peer: aioquic's public API is what they measure."""
AIOQUIC_ONLY = frozenset({
    "_quic", "_loss", "_network_paths", "_datagrams_pending", "_rtt_smoothed", "_rtt_min", "_rtt_initialized",
    "_cc", "_on_packets_lost", "_original_destination_connection_id", "_remote_max_datagram_frame_size",
    "_spaces", "_streams", "_streams_blocked_uni", "_events", "_is_client", "_peer_certificate",
    "_protocols", "_transmit_task", "_write_stream_limits", "_process_events",
})
"""aioquic's attributes flagged on any object but `self` even where a class of ours has one so named."""


def door_modules() -> list[Path]:
    """The modules that may touch aioquic's private state."""
    return sorted([QUIC / "introspect.py", *QUIC.glob("aioquic_*.py")])


@dataclass
class AioquicClasses:
    """aioquic's classes by name: the private names each uses (its bases' included)."""

    own: dict[str, set[str]] = field(default_factory=dict)
    bases: dict[str, set[str]] = field(default_factory=dict)

    def private(self, name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        names = set(self.own.get(name, ()))
        for base in self.bases.get(name, ()):
            if base not in seen:
                names |= self.private(base, seen | {name})
        return names

    def all_private(self) -> frozenset[str]:
        return frozenset().union(*self.own.values())


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.id if isinstance(b, ast.Name) else b.attr for b in node.bases if isinstance(b, ast.Name | ast.Attribute)}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@cache
def aioquic_classes() -> AioquicClasses:
    """Every class of aioquic's source with the `self._x` it uses and the `_x` methods it defines."""
    found = AioquicClasses()
    for path in Path(aioquic.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            names = found.own.setdefault(node.name, set())
            found.bases.setdefault(node.name, set()).update(_base_names(node))
            for inner in ast.walk(node):
                if (isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name)
                        and inner.value.id == "self" and _private(inner.attr)):
                    names.add(inner.attr)
                elif isinstance(inner, ast.FunctionDef) and _private(inner.name):
                    names.add(inner.name)
    return found


def _defined_by(node: ast.AST) -> set[str]:
    """The names a class (or every class of a module) gives its instances: assigned on `self`, methods, class
    attributes with a value."""
    names = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
             and n.value.id == "self" and isinstance(n.ctx, ast.Store)}
    for cls in [n for n in ast.walk(node) if isinstance(n, ast.ClassDef)]:
        for item in cls.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(item.name)
            elif isinstance(item, ast.Assign):
                names.update(t.id for t in item.targets if isinstance(t, ast.Name))
            elif isinstance(item, ast.AnnAssign) and item.value is not None and isinstance(item.target, ast.Name):
                names.add(item.target.id)
    return names


def _modules(package: str) -> list[Path]:
    doors = set(door_modules())
    return sorted(p for p in PACKAGES[package].rglob("*.py") if p not in doors)


@cache
def _trees() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text()) for pkg in PACKAGES for p in PACKAGES[pkg].rglob("*.py")}


@cache
def _our_names() -> frozenset[str]:
    """Attribute names our own classes outside the doors give their instances: a `_buffer` of ours is not aioquic's."""
    doors = set(door_modules())
    return frozenset().union(*(_defined_by(t) for p, t in _trees().items() if p not in doors))


@cache
def _our_aioquic_ancestry() -> dict[str, frozenset[str]]:
    """Our classes (by name) that derive from aioquic's, or are mixed into one that does (they share its
    instances: endings.Endings) -> the aioquic classes they derive from, or are mixed with."""
    known = aioquic_classes()
    ours = {node.name: _base_names(node) for tree in _trees().values() for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef)}
    ancestry: dict[str, frozenset[str]] = {}
    changed = True
    while changed:
        changed = False
        for name, bases in ours.items():
            found = frozenset(b for b in bases if b in known.own and b not in ours).union(
                *(ancestry.get(b, frozenset()) for b in bases if b in ours))
            if found != ancestry.get(name, frozenset()):
                ancestry[name] = found
                changed = True
    mixed: dict[str, frozenset[str]] = {}
    for name, bases in ours.items():
        for mixin in (b for b in bases if b in ours and not ancestry.get(b)) if ancestry.get(name) else ():
            mixed[mixin] = mixed.get(mixin, frozenset()) | ancestry[name]
    return {name: found for name, found in {**ancestry, **mixed}.items() if found}


def aioquic_reaches(tree: ast.AST, raw_allowed: bool, classes: AioquicClasses, ours: frozenset[str],
                    ancestry: dict[str, frozenset[str]]) -> list[str]:
    """What a module's syntax tree does with aioquic's private state, or its API where not allowed (`ours`: the
    private names our classes give their own instances; `ancestry`: our classes deriving from aioquic's)."""
    private = classes.all_private()
    elsewhere = (private - ours) | AIOQUIC_ONLY  # on objects but self: ours may share a name with aioquic
    found: list[str] = []

    def on_self(node: ast.Attribute, owner: ast.ClassDef | None) -> None:
        if owner is not None and owner.name in ancestry:
            forbidden = set().union(*(classes.private(c) for c in ancestry[owner.name]))
            if node.attr in forbidden:
                found.append(f"line {node.lineno}: {ast.unparse(node)} (aioquic's, on a subclass of it)")
        elif node.attr in AIOQUIC_ONLY and (owner is None or node.attr not in _defined_by(owner)):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")

    def visit(node: ast.AST, owner: ast.ClassDef | None) -> None:
        if isinstance(node, ast.ClassDef):
            owner = node
        elif isinstance(node, ast.FunctionDef) and owner is not None and owner.name in ancestry and _private(
                node.name) and node.name in set().union(*(classes.private(c) for c in ancestry[owner.name])):
            found.append(f"line {node.lineno}: overrides aioquic's {node.name}")
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
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                on_self(node, owner)
            elif node.attr in elsewhere:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2):
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value in elsewhere:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        for child in ast.iter_child_nodes(node):
            visit(child, owner)

    visit(tree, None)
    return found


def _check(paths: Iterable[Path]) -> dict[str, list[str]]:
    classes, ours, ancestry = aioquic_classes(), _our_names(), _our_aioquic_ancestry()
    problems = {}
    for path in paths:
        rel = str(path.relative_to(ROOT))
        raw_allowed = rel in RAW_AIOQUIC or QUIC in path.parents
        found = aioquic_reaches(_trees()[path], raw_allowed, classes, ours, ancestry)
        if found:
            problems[rel] = found
    return problems


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_module_outside_the_doors_reaches_into_aioquic(package: str) -> None:
    assert _check(_modules(package)) == {}


def test_the_doors_are_the_adapters_own_and_named_in_the_architecture() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    doors = [str(p.relative_to(PACKAGES["aqueduct"])) for p in door_modules()]
    assert {"quic/introspect.py", "quic/aioquic_connection.py", "quic/aioquic_protocol.py"} <= set(doors)
    section = re.search(r"## The aioquic door\n(.*?)\n## ", text, re.S)
    assert section is not None, "ARCHITECTURE.md has no '## The aioquic door' section"
    assert [d for d in doors if f"`{d}`" not in section.group(1)] == []
    # ... and the doors do touch aioquic's privates (else the check above would prove nothing of them)
    assert all(_check([p]) for p in door_modules())


def test_the_check_catches_what_it_forbids() -> None:
    classes = aioquic_classes()
    private = classes.all_private()
    assert {"_loss", "_streams", "_network_paths", "_write_stream_limits", "_process_events"} <= private
    bad = ast.parse(
        "from aioquic._buffer import Buffer\n"
        "from aioquic.quic.connection import QuicConnection\n"
        "rtt = conn.protocol.quic._loss._rtt_smoothed\n"
        "q = self._quic\n"
        "n = len(quic._streams)\n"
        "cid = getattr(quic, '_original_destination_connection_id', None)\n"
    )
    ours = frozenset({"_buffer", "_streams"})
    found = aioquic_reaches(bad, False, classes, ours, {})
    assert [f.split(":")[0] for f in found].count("line 3") == 2
    assert {f.split(":")[0] for f in found} == {f"line {n}" for n in range(1, 7)}
    assert aioquic_reaches(ast.parse("from aioquic.quic.connection import QuicConnection\n"), True, classes, ours,
                           {}) == []
    mine = "class Mine:\n    def __init__(self):\n        self._buffer = b''\n        self._streams = {}\n" \
           "    def n(self):\n        return len(self._streams) + len(self._buffer)\n"
    assert aioquic_reaches(ast.parse(mine), False, classes, ours, {}) == []
    # a mixin reading what aioquic's protocol keeps, a subclass of aioquic's naming its own attribute like one of
    # aioquic's, and one overriding a private method of aioquic's
    assert aioquic_reaches(ast.parse("class Mixin:\n    def f(self):\n        return self._quic\n"), False,
                           classes, ours, {}) != []
    sub = "class P(Door):\n    def __init__(self):\n        self._transport = None\n"
    assert aioquic_reaches(ast.parse(sub), False, classes, ours, {"P": frozenset({"QuicConnectionProtocol"})}) != []
    override = "class C(Door):\n    def _write_application(self, builder, path, now):\n        pass\n"
    assert aioquic_reaches(ast.parse(override), False, classes, ours, {"C": frozenset({"QuicConnection"})}) != []
