"""mypy checks the typed API: snippet files mark the lines mypy must reject (`# E: text`); every other line
must pass. mypy runs through `mypy.api` on the installed package, as a user's project would see it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mypy import api

HERE = Path(__file__).parent
SNIPPETS = sorted(HERE.glob("snippets_*.py"))
_MARK = re.compile(r"#\s*E:\s*(.+?)\s*$")
_ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<text>.*?)(?:  \[[\w-]+\])?$")


def _expected(path: Path) -> dict[int, str]:
    return {n: m.group(1) for n, line in enumerate(path.read_text().splitlines(), 1) if (m := _MARK.search(line))}


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda p: p.name)
def test_mypy_accepts_good_lines_and_rejects_marked_ones(snippet: Path, tmp_path: Path) -> None:
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict_equality = True\n")  # a user's plain settings, not the project's
    out, err, _ = api.run([str(snippet), "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
                           "--python-version", "3.11", "--show-error-codes", "--no-error-summary",
                           "--config-file", str(config), "--no-color-output"])
    errors: dict[int, list[str]] = {}
    for line in out.splitlines():
        m = _ERROR.match(line)
        if m:
            errors.setdefault(int(m["line"]), []).append(m["text"])
    expected = _expected(snippet)
    assert len(expected) >= 8, "the snippet should mark the errors it exists to catch"
    unexpected = {n: texts for n, texts in errors.items() if n not in expected}
    assert not unexpected, f"mypy rejected good lines: {unexpected}\n{err}"
    for n, text in expected.items():
        got = errors.get(n, [])
        assert any(text in e for e in got), f"line {n}: wanted an error containing {text!r}, got {got}"

