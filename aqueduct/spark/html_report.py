"""The self-contained HTML report of `aqueduct report`: the text report's tables and the charts in one file.

Charts are drawn by charts.py and embedded as base64 PNG `data:` URLs, the
styles are inline, and nothing is loaded from elsewhere: the file can be
mailed or archived as it is. Each section carries an id (`section-NAME`) and
its notes, so what a figure means travels with it.
"""

from __future__ import annotations

import base64
import html
import tempfile
from pathlib import Path

import pyarrow as pa

from aqueduct.spark.report import NOTES, SECTIONS, _fmt

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #eef; }
p.note { color: #555; font-size: 0.85em; max-width: 60em; }
img { max-width: 100%; border: 1px solid #ddd; }
"""


def _table_html(table: pa.Table, columns: list[str], limit: int) -> str:
    columns = [c for c in columns if c in table.column_names]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    rows = []
    for row in table.select(columns).slice(0, limit).to_pylist():
        rows.append("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row.values()) + "</tr>")
    more = f"<p class='note'>... {table.num_rows - limit} more rows</p>" if table.num_rows > limit else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"


def render_html(tables: dict[str, pa.Table], title: str) -> str:
    """The whole report as one HTML document."""
    from aqueduct.spark.charts import draw

    parts = [f"<h1>{html.escape(title)}</h1>"]
    with tempfile.TemporaryDirectory(prefix="aqueduct-report-") as tmp:
        for png in draw(tables, Path(tmp)):
            data = base64.b64encode(png.read_bytes()).decode()
            img = f"<img id='chart-{png.stem}' alt='{png.stem} chart' src='data:image/png;base64,{data}'>"
            parts.append(f"<h2>{html.escape(png.stem.capitalize())}</h2>{img}")
    for name, heading, columns, limit in SECTIONS:
        if name not in tables:
            continue
        notes = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in NOTES.get(name, ()))
        parts.append(f"<section id='section-{name}'><h2>{html.escape(heading)}</h2>"
                     f"{_table_html(tables[name], columns, limit)}{notes}</section>")  # fmt: skip
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body>\n{body}\n</body></html>\n")  # fmt: skip


def write_html(tables: dict[str, pa.Table], path: Path, title: str) -> Path:
    """Write the report to `path` (temp file and rename)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(render_html(tables, title), encoding="utf-8")
    tmp.replace(path)
    return path
