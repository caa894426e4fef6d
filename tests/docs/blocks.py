"""The code blocks of README.md and the documentation site's pages, as the tests read them.

The sources are what the site is built from: README.md (the home page), every page under docs/, and the
files those pages include with pymdownx.snippets' `--8<-- "FILE"` (SECURITY.md, CHANGELOG.md, ...). A block
is a fenced code block with its language, the file it is written in and the line its code starts on;
markdown-it parses the fences, so blocks inside lists and admonitions count too. A block included into a
page is read where it is written, once; a block whose whole content is such an include (the examples page's
```` --8<-- "examples/chat.py" ````) is that file's code, named by it. The blocks of one page that carry
the same title (```` ```python title="calc.py" ````, shown as the file's name on the site) are the parts of
one file: they are joined, in page order, into one block, whose `source_line` maps each of its lines back to
the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
_TITLE = re.compile(r'title="([^"]+)"')
_INCLUDE = re.compile(r'^--8<--\s+"([^":]+)(?::[\w-]+)?"\s*$', re.M)


@dataclass(frozen=True)
class Block:
    """One fenced code block."""

    source: str  # the file, relative to the repository
    line: int  # 1-based line of the block's first line of code
    lang: str
    code: str
    title: str = ""  # the fence's title="...", if any
    lines: tuple[int, ...] = ()  # for a block joined from parts: the page's line of each line of code

    def source_line(self, n: int) -> int:
        """The page's line of the block's n-th (1-based) line of code."""
        return self.lines[n - 1] if self.lines else self.line + n - 1

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
            title = m[1] if (m := _TITLE.search(token.info)) else ""
            if lang is None or block_lang == lang:
                included = _INCLUDE.fullmatch(token.content.strip())
                if included:  # a block that is a whole file (docs/examples.md): read where it is written
                    found.append(Block(included[1], 1, block_lang, (ROOT / included[1]).read_text(), title))
                else:
                    found.append(Block(str(path.relative_to(ROOT)), token.map[0] + 2, block_lang, token.content,
                                       title))
    return _joined(found)


def _joined(found: list[Block]) -> list[Block]:
    """The blocks with every titled block's later parts (same page, language and title) joined onto its first."""
    out: list[Block] = []
    first: dict[tuple[str, str, str], int] = {}
    for b in found:
        key = (b.source, b.lang, b.title)
        if not b.title or key not in first:
            first[key] = len(out)
            out.append(b)
            continue
        head = out[first[key]]
        lines = head.lines or tuple(range(head.line, head.line + len(head.code.splitlines())))
        lines += tuple(range(b.line, b.line + len(b.code.splitlines())))
        out[first[key]] = Block(head.source, head.line, head.lang, head.code + b.code, head.title, lines)
    return out


def block(source: str, containing: str) -> Block:
    """The one block of `source` whose code contains `containing`."""
    matches = [b for b in blocks() if b.source == source and containing in b.code]
    if len(matches) != 1:
        raise LookupError(f"{len(matches)} blocks of {source} contain {containing!r}")
    return matches[0]
