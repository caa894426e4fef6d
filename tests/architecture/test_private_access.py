"""State has one owner in aqueduct/api and aqueduct/core: a `_name` is private to its package (Python's and
trio's convention), and the fields core's parts own are written only by their owner.

A package is one directory: aqueduct/api/halves is a package of its own, not part of aqueduct/api. Checked
on the syntax tree of every module of the checked packages:
- every `x._name` (read, write or delete; a dunder aside) whose `x` is not `self` or `cls` (or `super()`),
  and every getattr/setattr/hasattr/delattr of a constant "_name" on such an `x`, is a finding unless a
  module of the same package defines `_name` (a `self._name = ...`, a class attribute, method or slot, a
  module-level name): the halves' package reads a half's `_binding`, the link's package does not, and asks
  the halves' wiring functions instead; aioquic's private state is read only inside aqueduct/quic;
- every `from M import _name` whose M is a module of another package is a finding too;
- ALLOWED lists the exceptions, each with its reason;
- OWNED names fields a core part owns that others may read but not write: an assignment, augmented
  assignment or delete of that attribute anywhere but its owner's module is a finding.

(A name defined in two packages is allowed in both: the check cannot tell the objects apart.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import aqueduct

ROOT = Path(aqueduct.__file__).parent
CHECKED = ("api", "core")
ALLOWED: dict[tuple[str, str], str] = {}
"""(module path under aqueduct/, attribute) -> why that module may reach into another object there."""
OWNED = {
    "partial_bytes": "core/flow.py",  # Flow.hold / Flow.release
    "ack_due": "core/acks.py",  # ReceiveAcks.owe_acks / ReceiveAcks.acks_written
    "done_prefix": "core/acks.py",  # ReceiveAcks.mark_reliable / ReceiveAcks.in_order
}
"""Field -> the module of its owner, the only one that writes it."""
_REFLECTION = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own(node: ast.expr) -> bool:
    """Whether `node` is the object itself: `self`, `cls` or `super()`."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _package(rel: str) -> str:
    return rel.rpartition("/")[0]


def _defined(tree: ast.AST) -> set[str]:
    """The private names a module defines: attributes it assigns on self/cls, class members and slots, module
    names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _own(node.value):
            names.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                                   for t in node.targets):
            names.update(c.value for c in ast.walk(node.value)
                         if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return {name for name in names if _private(name)}


def _imported_from(rel: str, node: ast.ImportFrom) -> str | None:
    """The package (path under aqueduct/) of the module a relative import reads, None for other imports."""
    if not node.level:
        module = node.module or ""
        if not module.startswith("aqueduct."):
            return None
        parts = module.split(".")[1:]
    else:
        base = rel.split("/")[:-1]
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
        parts = base + (node.module.split(".") if node.module else [])
    path = "/".join(parts)
    return path if (ROOT / path).is_dir() else path.rpartition("/")[0]


def _findings(rel: str, tree: ast.AST, defined: dict[str, set[str]]) -> list[str]:
    own = defined.get(_package(rel), set())
    found: list[str] = []
    for node in ast.walk(tree):
        name: str | None = None
        target: ast.expr | None = None
        if isinstance(node, ast.Attribute):
            name, target = node.attr, node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _REFLECTION
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str)):
            name, target = node.args[1].value, node.args[0]
        elif isinstance(node, ast.ImportFrom):
            package = _imported_from(rel, node)
            if package is not None and package != _package(rel):
                found += [f"aqueduct/{rel}:{node.lineno}: from {package} import {a.name}" for a in node.names
                          if _private(a.name) and (rel, a.name) not in ALLOWED]
            continue
        if name is None or target is None or not _private(name) or _own(target) or (rel, name) in ALLOWED:
            continue
        if name in own:
            continue
        found.append(f"aqueduct/{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def _defined_by_package(modules: list[tuple[str, ast.AST]]) -> dict[str, set[str]]:
    defined: dict[str, set[str]] = {}
    for rel, tree in modules:
        defined.setdefault(_package(rel), set()).update(_defined(tree))
    return defined


def _owned_writes(rel: str, tree: ast.AST) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Attribute) and OWNED.get(sub.attr, rel) != rel:
                    found.append(f"aqueduct/{rel}:{node.lineno}: {ast.unparse(sub)} (owned by {OWNED[sub.attr]})")
    return found


def _modules() -> list[tuple[str, ast.AST]]:
    out = []
    for package in CHECKED:
        for path in sorted((ROOT / package).rglob("*.py")):
            out.append((path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), str(path))))
    return out


def test_no_module_reaches_a_private_name_of_another_package() -> None:
    modules = _modules()
    defined = _defined_by_package(modules)
    assert {"_binding", "_spec"} <= defined["api/halves"] and "_binding" not in defined["api"]
    found = [f for rel, tree in modules for f in _findings(rel, tree, defined)]
    assert not found, f"{len(found)} reaches into another package's private state:\n" + "\n".join(found)


def test_owned_fields_are_written_only_by_their_owner() -> None:
    found = [f for rel, tree in _modules() for f in _owned_writes(rel, tree)]
    assert not found, f"{len(found)} writes of a field another part owns:\n" + "\n".join(found)


def test_the_checks_see_what_they_look_for() -> None:
    """The finders themselves: a reach-in, a reflective one, an import of another package's private name and
    a write of an owned field are found; the object's own attributes, a dunder, a private name its own package
    defines and a write in the owner's module are not."""
    code = ast.parse(
        "from .halves.bindings import _Half\n"
        "from ._local import _ok\n"
        "def f(self, other, flow):\n"
        "    self._mine = other._theirs\n"
        "    getattr(other, '_hidden')\n"
        "    super()._base()\n"
        "    other.__class__\n"
        "    other._ours\n"
        "    flow.partial_bytes += 1\n"
    )
    defined = {"api": {"_ours", "_mine"}, "api/halves": {"_theirs", "_hidden", "_Half"}}
    assert [f.split(": ", 1)[1] for f in _findings("api/x.py", code, defined)] == [
        "from api/halves import _Half", "other._theirs", "getattr(other, '_hidden')"]
    assert _findings("api/halves/y.py", ast.parse("def f(o):\n    o._theirs\n"), defined) == []
    assert len(_owned_writes("core/incoming.py", code)) == 1
    assert _owned_writes("core/flow.py", code) == []
