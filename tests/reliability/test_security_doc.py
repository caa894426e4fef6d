"""SECURITY.md's defaults are the code's: every "`name` (value)" it gives for a config field matches."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from aqueduct.core.config import EngineConfig
from aqueduct.quic.settings import TransportSettings

_UNITS = {"KiB": 1024, "MiB": 1024 * 1024, "s": 1, "": 1}
_MENTION = re.compile(r"`(\w+)` \((\d[\d ,_]*(?:\.\d+)?) ?(KiB|MiB|s)?[);]")


def _defaults() -> dict[str, object]:
    found: dict[str, object] = {}
    for cls in (EngineConfig, TransportSettings):
        found.update({f.name: getattr(cls(), f.name) for f in dataclasses.fields(cls)})
    return found


def test_security_md_defaults_match_the_code() -> None:
    text = (Path(__file__).parents[2] / "SECURITY.md").read_text()
    defaults = _defaults()
    checked = 0
    for name, number, unit in _MENTION.findall(text):
        if name not in defaults:
            continue
        value = float(re.sub(r"[ ,_]", "", number)) * _UNITS[unit or ""]
        assert defaults[name] == value, f"SECURITY.md says {name} = {number} {unit}, the code {defaults[name]}"
        checked += 1
    assert checked >= 12
