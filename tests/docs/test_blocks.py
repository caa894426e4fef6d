"""The code blocks of README and the guides are checked, not trusted: every Python block is type-checked
by mypy as a user's project would (a line whose comment says `mypy error` must be rejected, every other
line accepted), every complete program among them (one that calls `asyncio.run`) runs, README's client
and server example runs against each other on a free port, and every `aqueduct` / `aeron_compat`
command line in a shell block parses with the command's own parser."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from harness.signals import terminal_sigint
from mypy import api

from aqueduct.quic.certs import DevCerts

from .blocks import ROOT, Block, block, blocks

_ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<text>.*)$")
PYTHON = blocks("python")
PROGRAMS = [b for b in PYTHON if "asyncio.run(" in b.code]


def _module_name(b: Block) -> str:
    return re.sub(r"\W", "_", b.name.removesuffix(".md").replace(".md:", "_"))


def test_the_guides_have_python_blocks_in_every_topic() -> None:
    pages = {b.source for b in PYTHON}
    for page in ("README.md", "docs/typed-channels.md", "docs/operations.md", "docs/security.md", "docs/aeron.md",
                 "docs/bymux.md", "docs/marlin-stream.md"):
        assert page in pages, page


def test_every_python_block_type_checks_as_it_says(tmp_path: Path) -> None:
    files = {}
    for b in PYTHON:
        path = tmp_path / f"{_module_name(b)}.py"
        path.write_text(b.code)
        files[path.name] = b
    config = tmp_path / "mypy.ini"
    # a user's strict settings, not the project's; the examples import their helpers from beside them
    config.write_text(f"[mypy]\nstrict = True\nmypy_path = {ROOT / 'examples'}\n")
    out, err, _ = api.run([*map(str, sorted(tmp_path.glob("*.py"))), "--no-incremental", "--cache-dir",
                           str(tmp_path / "cache"), "--python-version", "3.11", "--config-file", str(config),
                           "--no-error-summary", "--no-color-output", "--hide-error-context"])  # fmt: skip
    errors: dict[tuple[str, int], list[str]] = {}
    for line in out.splitlines():
        if m := _ERROR.match(line):
            errors.setdefault((Path(m["file"]).name, int(m["line"])), []).append(m["text"])
    wrong = []
    for name, b in files.items():
        for n, text in enumerate(b.code.splitlines(), 1):
            got = errors.pop((name, n), [])
            expected = "mypy error" in text
            if expected != bool(got):
                wrong.append(f"{b.source}:{b.source_line(n)}: {'no error' if expected else got}: {text.strip()}")
    assert not wrong and not errors, "\n".join(wrong) + f"\n{errors}\n{err}"
    assert sum("mypy error" in b.code for b in PYTHON) >= 1  # the typed-channels guide shows a rejected send


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda b: b.name)
def test_complete_programs_in_the_guides_run(program: Block, tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", program.code], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr


def test_readme_client_and_server_example_runs(certs: DevCerts, tmp_path: Path) -> None:
    """As README says: `python example.py server` in one terminal, `python example.py` in another, Ctrl-C."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    example = block("README.md", "async def server()").code
    (tmp_path / "example.py").write_text(
        example.replace("4433", str(port)).replace("certs/ca.pem", str(certs.ca))
        .replace("certs/cert.pem", str(certs.cert)).replace("certs/key.pem", str(certs.key)))
    server = subprocess.Popen([sys.executable, "example.py", "server"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, preexec_fn=terminal_sigint,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})  # (its print goes to a pipe here)
    try:
        assert server.stdout is not None
        assert server.stdout.readline() == f"listening on ('127.0.0.1', {port})\n"
        client = subprocess.run([sys.executable, "example.py"], capture_output=True, text=True, timeout=60,
                                cwd=tmp_path)
        assert client.returncode == 0, client.stderr
        assert client.stdout.splitlines() == ["{'time': '12:00'}"]
        server.send_signal(signal.SIGINT)  # Ctrl-C
        _, err = server.communicate(timeout=60)
        assert err.splitlines() == ["stopped: Ctrl-C"] and server.returncode == 130
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def _command_lines() -> list[tuple[Block, list[str]]]:
    found = []
    for b in blocks("sh"):
        pending = ""
        for line in b.code.replace("\\\n", " ").splitlines():
            pending += line + "\n"
            try:
                words = shlex.split(pending, comments=True)
            except ValueError:  # a quoted argument goes on to the next line
                continue
            pending = ""
            while words and "=" in words[0]:  # VAR=value before the command
                words.pop(0)
            if words and Path(words[0]).name in ("aqueduct", "aeron_compat"):
                found.append((b, [Path(words[0]).name, *words[1:]]))
    return found


def test_every_command_line_in_the_guides_parses(capsys: pytest.CaptureFixture[str]) -> None:
    from aeron_compat.tools.cli import build_parser as aeron_compat_parser
    from aqueduct.cli import build_parser as aqueduct_parser

    parsers = {"aqueduct": aqueduct_parser(), "aeron_compat": aeron_compat_parser()}
    lines = _command_lines()
    assert len(lines) >= 10
    for b, words in lines:
        try:
            parsers[words[0]].parse_args(words[1:])
        except SystemExit as exited:  # --version and --help exit 0 once they printed
            assert exited.code == 0, f"{b.name}: {shlex.join(words)} does not parse: {capsys.readouterr().err}"


def test_getting_started_links_every_guide_and_the_examples() -> None:
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text().split("\nnav:", 1)[1].join(["nav:", ""]))["nav"]
    guides = [page for entry in nav if isinstance(entry, dict) and "Guides" in entry
              for item in entry["Guides"] for page in item.values()]
    text = (ROOT / "docs" / "getting-started.md").read_text()
    where_next = text[text.index("## Where next"):]
    assert len(guides) >= 9
    for page in [*guides, "performance.md", "examples.md"]:
        assert f"]({page})" in where_next, page


def test_every_guide_has_headings_for_its_table_of_contents() -> None:
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text()
        if text.lstrip().startswith("--8<--"):  # (a page that is an included file, which has its own)
            continue
        assert re.search(r"^## ", text, re.M), f"{page.name} has no section headings (an empty table of contents)"


def test_the_examples_page_shows_every_example() -> None:
    text = (ROOT / "docs" / "examples.md").read_text()
    for path in sorted((ROOT / "examples").glob("[!_]*.py")):
        assert f'--8<-- "examples/{path.name}"' in text, path.name
