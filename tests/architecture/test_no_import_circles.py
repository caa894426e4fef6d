"""No import circle anywhere in a package, counting imports under TYPE_CHECKING and inside functions.

A circle is a dependency a reader must follow both ways; a protocol class or a callback breaks one
(api/link.py's Recording, recording/tap.py's RowSink, aeron_compat's PublicationOwner, NetworkHost, ...),
a late import only hides it. PACKAGES lists the packages held to this (aeron_compat's floors between its
subpackages: test_aeron_compat_circles.py).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from archgraph import circles, import_graph

PACKAGES = ["aqueduct", "aeron_compat"]


@pytest.mark.parametrize("package", PACKAGES)
def test_the_package_has_no_import_circle(package: str) -> None:
    root = Path(importlib.import_module(package).__file__ or "").parent
    graph = import_graph(root)
    assert len(graph) > 10 and sum(map(len, graph.values())) > len(graph)  # (the graph was read)
    assert circles(graph) == []


def test_the_graph_counts_type_checking_and_function_level_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    (pkg / "b.py").write_text("def f():\n    from pkg import a\n    return a\n")
    (pkg / "c.py").write_text("from .sub import d\nimport pkg.b\n")
    (pkg / "sub" / "d.py").write_text("from ..c import x\n")
    (pkg / "e.py").write_text("import os\nfrom . import a\n")
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.c"] == {"pkg.sub.d", "pkg.b"} and graph["pkg.sub.d"] == {"pkg.c"}
    assert graph["pkg.e"] == {"pkg.a"}
    assert circles(graph) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.sub.d"]]


def test_circles_finds_every_strongly_connected_component() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}, "f": {"a"}}
    assert circles(graph) == [["a", "b", "c"], ["e", "e2"]]
    chain = {str(i): {str(i + 1)} for i in range(5000)} | {"5000": {"0"}}
    assert circles(chain) == [sorted(chain)]  # (iterative: no recursion limit)
