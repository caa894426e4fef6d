"""Examples stop quietly on Ctrl-C: the asynchronous ones run through `aqueduct.run` (one line, status 130:
tests/api/test_run.py), the synchronous ones through `_common.exit_with` (status 130, no traceback)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

INTERRUPTED_SYNC = """
import sys
sys.path.insert(0, sys.argv[1])
from _common import exit_with

def main() -> int:
    raise KeyboardInterrupt

exit_with(main)
"""


def test_exit_with_exits_130_without_a_traceback() -> None:
    out = subprocess.run([sys.executable, "-c", INTERRUPTED_SYNC, str(EXAMPLES)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 130
    assert out.stderr == "" and out.stdout == ""


def test_every_example_starts_through_a_quiet_runner() -> None:
    for path in EXAMPLES.glob("[!_]*.py"):
        tree = ast.parse(path.read_text())
        mains = [node for node in tree.body if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]
        assert len(mains) == 1, path.name
        body = [ast.unparse(stmt) for stmt in mains[0].body]
        assert body in (["aqueduct.run(main())"], ["exit_with(main)"]), path.name
