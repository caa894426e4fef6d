"""SECURITY.md's defaults are the code's: every "`name` (value)" it gives for a config field matches.

The Marlin Stream section documents `StreamConfig` (checked by tests/stream); the rest documents EngineConfig
TransportSettings and the services' ServiceLimits, checked here."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from aqueduct.core.config import EngineConfig
from aqueduct.quic.settings import TransportSettings
from aqueduct.services.context import ServiceLimits

_UNITS = {"KiB": 1024, "MiB": 1024 * 1024, "s": 1, "": 1}
_MENTION = re.compile(r"`(\w+)` \((\d[\d ,_]*(?:\.\d+)?) ?(KiB|MiB|s)?[);]")


STREAM_SECTION = "## Marlin Stream endpoint"


def _defaults(*classes: type) -> dict[str, object]:
    found: dict[str, object] = {}
    for cls in classes:
        found.update({f.name: getattr(cls(), f.name) for f in dataclasses.fields(cls)})
    return found


def _check(text: str, defaults: dict[str, object]) -> int:
    checked = 0
    for name, number, unit in _MENTION.findall(text):
        if name not in defaults:
            continue
        value = float(re.sub(r"[ ,_]", "", number)) * _UNITS[unit or ""]
        assert defaults[name] == value, f"SECURITY.md says {name} = {number} {unit}, the code {defaults[name]}"
        checked += 1
    return checked


def test_security_md_defaults_match_the_code() -> None:
    text = (Path(__file__).parents[2] / "SECURITY.md").read_text()
    start = text.index(STREAM_SECTION)
    end = text.index("\n## ", start + 1)
    assert _check(text[:start] + text[end:], _defaults(EngineConfig, TransportSettings, ServiceLimits)) >= 18
