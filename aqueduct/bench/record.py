"""Keeping the record of runs: `aqueduct bench --save` and `aqueduct bench --compare A B`.

A saved run is the report's JSON (report.as_json: every sample, cell, target
and the machine facts of machine.py) written to
`benchmarks/results/<UTC time>-<commit>.json` under the current directory.

Comparing two saved runs matches their cells by (transport, workload) and
prints, per cell, both medians, B / A, both runs' same-run ratios to their
reference ("vs ref") and a verdict. The verdict is "better" or "worse" only
when the two runs' min-max ranges do not overlap (in the workload's good
direction), "~" otherwise: on a shared machine a median alone moves by
more than most changes. Between different machines or loads, compare the
"vs ref" columns: each is normalised within its own run. Cells only one run
has are listed as such.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .runner import BY_KEY

RESULTS_DIR = Path("benchmarks") / "results"
FORMAT = 1
"""The saved JSON's format (the "format" key); a file without it is read as format 1."""


class CompareError(Exception):
    """A file given to --compare is missing or is not a saved bench run."""


def save(document: dict[str, Any], directory: Path | None = None) -> Path:
    """Write a run's JSON under `directory` (default benchmarks/results/ under the current directory)."""
    where = directory if directory is not None else RESULTS_DIR
    where.mkdir(parents=True, exist_ok=True)
    commit = (document.get("environment", {}).get("git") or {}).get("commit") or "nogit"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = where / f"{stamp}-{commit[:10]}.json"
    n = 1
    while path.exists():
        n += 1
        path = where / f"{stamp}-{commit[:10]}-{n}.json"
    path.write_text(json.dumps({"format": FORMAT, **document}, indent=1))
    return path


def load(path: str | Path) -> dict[str, Any]:
    """A saved run, checked to have the cells a comparison needs."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise CompareError(f"cannot read {path}: {e}") from e
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise CompareError(f"{path} is not a saved `aqueduct bench` run (no 'cells' list)")
    if data.get("format", FORMAT) != FORMAT:
        raise CompareError(f"{path} has format {data['format']}; this aqueduct reads format {FORMAT}")
    return data


@dataclass(frozen=True)
class Row:
    """One cell of the comparison."""

    workload: str
    transport: str
    unit: str
    a: dict[str, Any] | None
    b: dict[str, Any] | None

    @property
    def change(self) -> float | None:
        """B's median / A's median."""
        if self.a is None or self.b is None or not self.a["median"]:
            return None
        return float(self.b["median"]) / float(self.a["median"])

    @property
    def verdict(self) -> str:
        """'better', 'worse' (the runs' ranges do not overlap), '~' (they do), or which run lacks the cell."""
        if self.a is None:
            return "only in B"
        if self.b is None:
            return "only in A"
        higher = BY_KEY[self.workload].higher_is_better if self.workload in BY_KEY else True
        if self.b["low"] > self.a["high"]:
            return "better" if higher else "worse"
        if self.b["high"] < self.a["low"]:
            return "worse" if higher else "better"
        return "~"


def rows(a: dict[str, Any], b: dict[str, Any]) -> list[Row]:
    """Every cell of either run, in A's order, then B's new ones."""
    by_a = {(c["transport"], c["workload"]): c for c in a["cells"]}
    by_b = {(c["transport"], c["workload"]): c for c in b["cells"]}
    keys = list(by_a) + [k for k in by_b if k not in by_a]
    order = {w: i for i, w in enumerate(BY_KEY)}
    keys.sort(key=lambda k: order.get(k[1], len(order)))
    out = []
    for t, w in keys:
        cell = by_a.get((t, w)) or by_b[(t, w)]
        out.append(Row(w, t, cell["unit"], by_a.get((t, w)), by_b.get((t, w))))
    return out


def _num(value: float | None, ratio: bool = False) -> str:
    if value is None:
        return "-"
    if ratio:
        return f"{value:.2f}x"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _get(cell: dict[str, Any] | None, key: str) -> float | None:
    value = None if cell is None else cell.get(key)
    return None if value is None else float(value)


def _describe(name: str, data: dict[str, Any]) -> str:
    env = data.get("environment", {})
    git = env.get("git") or {}
    commit = (git.get("commit") or "?")[:10] + ("+dirty" if git.get("dirty") else "")
    load = ", ".join(f"{x:.1f}" for x in env.get("load_average", [])) or "?"
    built = env.get("compiled") or {}
    mode = "compiled" if built.get("active") else "pure" if built else "?"
    return (f"{name}: {env.get('utc', '?')} commit {commit} on {env.get('cpus', '?')} x "
            f"{env.get('cpu_model') or '?'}, {env.get('loop', '?')}, {mode}, load {load}")


def compare_table(a: dict[str, Any], b: dict[str, Any], a_name: str = "A", b_name: str = "B") -> str:
    """The comparison as text (see the module docstring)."""
    head = (f"{'workload':<22} {'transport':<30} {'A':>10} {'B':>10} {'B/A':>7} {'A vs ref':>9} {'B vs ref':>9}"
            f"  verdict")
    lines = [_describe("A", a) + f" ({a_name})", _describe("B", b) + f" ({b_name})",
             "verdict: better/worse only when the runs' min-max ranges do not overlap; '~' otherwise. "
             "Across machines or loads, read the 'vs ref' columns.", head, "-" * len(head)]
    last = ""
    for r in rows(a, b):
        title = f"{r.workload} ({r.unit})" if r.workload != last else ""
        last = r.workload
        lines.append(
            f"{title:<22} {r.transport:<30} {_num(_get(r.a, 'median')):>10} {_num(_get(r.b, 'median')):>10} "
            f"{_num(r.change, True):>7} {_num(_get(r.a, 'ratio'), True):>9} "
            f"{_num(_get(r.b, 'ratio'), True):>9}  {r.verdict}")
    return "\n".join(lines)
