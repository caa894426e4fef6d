"""specs/RECORDING.md's recorder defaults and column list are the code's."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from aqueduct.recording import Recorder
from aqueduct.recording.schema import COLUMNS, Kind

_DOC = Path(__file__).parents[2] / "specs" / "RECORDING.md"
_UNITS = {"MiB": 1 << 20, "s": 1, "": 1}


def test_recorder_defaults_match_the_spec() -> None:
    text = _DOC.read_text()
    params = inspect.signature(Recorder).parameters
    found = re.findall(r"`(\w+)`,? \(?default ([\d,]+) ?(MiB|s)?", text)
    assert {name for name, _, _ in found} >= {"batch_rows", "segment_bytes", "segment_seconds"}
    for name, number, unit in found:
        assert params[name].default == int(number.replace(",", "")) * _UNITS[unit], name
    assert f"{params['compression'].default} by default" in text


def test_spec_lists_every_column_and_kind() -> None:
    text = _DOC.read_text()
    assert re.findall(r"^\| `(\w+)` \| (?:int64|string|double|binary|list)", text, re.M) == list(COLUMNS)
    assert {k.value for k in Kind} <= set(re.findall(r"`(\w+)`", text))
