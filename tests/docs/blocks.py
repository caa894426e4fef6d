"""The code blocks of README.md and the documentation site's pages, as the tests read them.

The sources are what the site is built from: README.md (the home page), every page under docs/, and the
files those pages include with pymdownx.snippets' `--8<-- "FILE"` (SECURITY.md, CHANGELOG.md, ...). A block
is a fenced code block with its language, the file it is written in and the line its code starts on;
markdown-it parses the fences, so blocks inside lists and admonitions count too. A block included into a
page is read where it is written, once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
_INCLUDE = re.compile(r'^--8<--\s+"([^":]+)(?::[\w-]+)?"\s*$', re.M)


@dataclass(frozen=True)
class Block:
    """One fenced code block."""

    source: str  # the file, relative to the repository
    line: int  # 1-based line of the block's first line of code
    lang: str
    code: str

    @property
    def name(self) -> str:
        """`docs/typed-channels.md:12`, for test ids and messages."""
        return f"{self.source}:{self.line}"


def sources() -> list[Path]:
    """README.md, docs/**/*.md and every file they include, each once."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in list(found):
        for included in _INCLUDE.findall(page.read_text()):
            path = ROOT / included
            if path not in found:
                found.append(path)
    return found


def blocks(lang: str | None = None) -> list[Block]:
    """Every fenced block of the sources (of one language, if given), in file order."""
    parser = MarkdownIt("commonmark")
    found = []
    for path in sources():
        for token in parser.parse(path.read_text()):
            if token.type != "fence" or token.map is None:
                continue
            block_lang = token.info.split()[0] if token.info.strip() else ""
            if lang is None or block_lang == lang:
                found.append(Block(str(path.relative_to(ROOT)), token.map[0] + 2, block_lang, token.content))
    return found


def block(source: str, containing: str) -> Block:
    """The one block of `source` whose code contains `containing`."""
    matches = [b for b in blocks() if b.source == source and containing in b.code]
    if len(matches) != 1:
        raise LookupError(f"{len(matches)} blocks of {source} contain {containing!r}")
    return matches[0]
