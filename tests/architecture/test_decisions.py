"""The decisions a newcomer can find: specs/decisions/ holds one file per topic, each decision under a heading
`### ID: title` whose id is stable, and specs/DECISIONS.md is their index. These tests hold the index to the
files (every id listed once, in its topic's section, with its title) and every citation of a decision in the
repository (`decision SEC-5`, `decisions MARLIN-17, MARLIN-18`) to an id that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEADING = re.compile(r"^### ([A-Z]+-\d+): (.+)$", re.M)
ID = re.compile(r"\b([A-Z]{3,6})-(\d+)\b")
CITATION = re.compile(r"\bdecisions? ((?:[A-Z]{3,6}-\d+(?:,\s*|\s+and\s+)?)+)")
SKIP_DIRS = {".git", ".venv", ".ci-venv", "node_modules", "site", "out", ".pytest_cache", ".mypy_cache"}


def decisions() -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for path in sorted((ROOT / "specs" / "decisions").glob("*.md")):
        for ident, title in HEADING.findall(path.read_text()):
            assert ident not in found, f"{ident} appears twice: {found[ident][0]} and {path.name}"
            found[ident] = (path.name, title)
    return found


def test_every_decision_has_a_unique_id_numbered_from_one_within_its_topic() -> None:
    by_prefix: dict[str, list[int]] = {}
    for ident in decisions():
        prefix, number = ident.rsplit("-", 1)
        by_prefix.setdefault(prefix, []).append(int(number))
    assert by_prefix, "no decisions found"
    for prefix, numbers in by_prefix.items():
        assert sorted(numbers) == list(range(1, len(numbers) + 1)), f"{prefix}: ids not 1..n: {sorted(numbers)}"


def test_each_topic_file_uses_one_prefix() -> None:
    prefixes: dict[str, set[str]] = {}
    for ident, (name, _) in decisions().items():
        prefixes.setdefault(name, set()).add(ident.rsplit("-", 1)[0])
    assert all(len(p) == 1 for p in prefixes.values()), prefixes


def test_the_index_lists_every_decision_once_under_its_topic_with_its_title() -> None:
    index = (ROOT / "specs" / "DECISIONS.md").read_text()
    listed: dict[str, tuple[str, str]] = {}
    topic = ""
    for line in index.splitlines():
        head = re.match(r"^## \[.*\]\(decisions/([a-z-]+\.md)\)", line)
        if head:
            topic = head.group(1)
            continue
        entry = re.match(r"^- ([A-Z]+-\d+): (.+)$", line)
        if entry:
            assert entry.group(1) not in listed, f"{entry.group(1)} listed twice"
            listed[entry.group(1)] = (topic, entry.group(2))
    assert listed == decisions()


def test_every_cited_decision_exists() -> None:
    known = decisions()
    missing: list[str] = []
    for path in ROOT.rglob("*"):
        if not path.is_file() or SKIP_DIRS & set(path.relative_to(ROOT).parts):
            continue
        if path.suffix not in {".py", ".md", ".sh", ".toml", ".yml", ".ts", ".txt"}:
            continue
        text = path.read_text(errors="replace")
        for cited in CITATION.findall(text):
            for prefix, number in ID.findall(cited):
                if f"{prefix}-{number}" not in known:
                    missing.append(f"{path.relative_to(ROOT)}: {prefix}-{number}")
    assert not missing, missing
