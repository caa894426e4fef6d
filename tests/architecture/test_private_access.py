"""State has one owner in aqueduct/api and aqueduct/core: no module reads or writes another object's private
attributes, and the fields core's parts own are written only by their owner.

Checked on the syntax tree of every module of the two packages:
- every `x._name` (read, write or delete; a dunder aside) whose `x` is not `self` or `cls` (or `super()`), and
  every getattr/setattr/hasattr/delattr of a constant "_name" on such an `x`, is a finding: a module that
  needs another object's state asks it through a method or a property of that object (a half's `port`, a
  connection's `link`, a part's `hold`/`release`, ...). ALLOWED lists the exceptions, each with its reason;
  aioquic's private state is read only inside aqueduct/quic/introspect.py, outside these packages;
- OWNED names fields a core part owns that others may read but not write: an assignment, augmented
  assignment or delete of that attribute anywhere but its owner's module is a finding.
"""

from __future__ import annotations

import ast
from pathlib import Path

import aqueduct

ROOT = Path(aqueduct.__file__).parent
CHECKED = ("api", "core")
ALLOWED: dict[tuple[str, str], str] = {
    ("api/connection.py", "_link"): "`link_of`, in Connection's own module, is the library's door to the link the "
    "public facade keeps off its surface (tests/api/test_public_surface.py)",
}
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


def _findings(rel: str, tree: ast.AST) -> list[str]:
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
        if name is None or target is None or not _private(name) or _own(target) or (rel, name) in ALLOWED:
            continue
        found.append(f"aqueduct/{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


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


def test_no_module_reads_or_writes_another_objects_private_attributes() -> None:
    found = [f for rel, tree in _modules() for f in _findings(rel, tree)]
    assert not found, f"{len(found)} reaches into another object's private state:\n" + "\n".join(found)


def test_owned_fields_are_written_only_by_their_owner() -> None:
    found = [f for rel, tree in _modules() for f in _owned_writes(rel, tree)]
    assert not found, f"{len(found)} writes of a field another part owns:\n" + "\n".join(found)


def test_the_checks_see_what_they_look_for() -> None:
    """The finders themselves: a reach-in, a reflective one and a write of an owned field are found; the
    object's own attributes, a dunder and a write in the owner's module are not."""
    code = ast.parse(
        "def f(self, other, flow):\n"
        "    self._mine = other._theirs\n"
        "    getattr(other, '_hidden')\n"
        "    super()._base()\n"
        "    other.__class__\n"
        "    flow.partial_bytes += 1\n"
    )
    assert [f.split(": ", 1)[1] for f in _findings("api/x.py", code)] == ["other._theirs",
                                                                          "getattr(other, '_hidden')"]
    assert len(_owned_writes("core/incoming.py", code)) == 1
    assert _owned_writes("core/flow.py", code) == []
