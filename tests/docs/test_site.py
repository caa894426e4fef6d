"""`mkdocs build --strict` builds the site (as .ci/run does), with a page per public name and per command,
made from the code at build time; a public name without a docstring is found and fails the build."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import griffe

from .conftest import ROOT


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _text(page: Path) -> str:
    return re.sub(r"<[^>]+>", "", page.read_text())


def test_every_guide_is_a_page(site: Path) -> None:
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert (site / page.stem / "index.html").exists(), page.name
    home = (site / "index.html").read_text()
    assert "aqueduct-quic" in home and 'href="typed-channels/"' in home  # README, its docs/ links made site-relative
    assert "Threat model" in _text(site / "security" / "index.html")  # SECURITY.md, included
    assert "[Unreleased]" in _text(site / "releases" / "index.html")  # CHANGELOG.md, included
    assert (site / "benchmarks" / "profiles" / "ordered-after.svg").exists()  # the Performance page's plots


def test_every_public_name_has_a_reference_page(site: Path) -> None:
    hooks = _hooks()
    collection = hooks.packages()
    for package in hooks.REFERENCE:
        slugs = hooks._slugs(collection, package)
        assert len(slugs) == len(importlib.import_module(package).__all__)
        for name, slug in slugs.items():
            page = site / "reference" / package / slug / "index.html"
            assert page.exists(), f"{package}.{name}"
            assert name in _text(page)
    sender = _text(site / "reference" / "aqueduct" / "Sender" / "index.html")
    assert "confirm" in sender and "finish" in sender  # its methods, from their docstrings


def test_a_class_page_shows_what_an_application_calls_and_not_the_librarys_wiring(site: Path) -> None:
    for name, calls, wiring in (
        ("Sender", {"send", "try_send", "finish", "cancel", "clone"}, {"bind", "join", "hand_on", "send_notice"}),
        ("Receiver", {"recv", "recv_message", "close"}, {"bind", "join", "take_over", "accept_lags"}),
    ):
        html = (site / "reference" / "aqueduct" / name / "index.html").read_text()
        shown = set(re.findall(rf'id="aqueduct\.{name}\.(\w+)"', html))
        assert calls <= shown and not wiring & shown, (name, shown)
        method = getattr(importlib.import_module("aqueduct"), name).bind
        assert (method.__doc__ or "").startswith(_hooks().WIRING)  # what the page's filter reads
        assert "Bases: " not in _text(site / "reference" / "aqueduct" / name / "index.html")  # (only _Half: private)
    assert "Bases: ConnectError" in _text(site / "reference" / "aqueduct" / "AuthenticationFailed" / "index.html")


def test_every_command_has_its_help_page(site: Path) -> None:
    hooks = _hooks()
    commands = hooks.command_parsers()
    assert {"aqueduct serve", "aqueduct wire", "aeron_compat driver", "aeron_compat stream listen"} <= {
        prog for prog, _ in commands}
    for prog, parser in commands:
        page = site / "reference" / "cli" / prog.replace(" ", "-") / "index.html"
        usage = hooks.help_text(parser).splitlines()[0]
        assert usage.split()[0] == "usage:" and prog in _text(page), prog
    serve = _text(site / "reference" / "cli" / "aqueduct-serve" / "index.html")
    assert "--metrics-port" in serve and "--grace" in serve


def test_a_public_name_without_a_docstring_is_found(tmp_path: Path) -> None:
    package = tmp_path / "undocumented"
    package.mkdir()
    (package / "__init__.py").write_text(
        '"""A package."""\n__all__ = ["Good", "bare", "Half", "LIMIT"]\n'
        'LIMIT = 3\n'
        'def bare() -> None: ...\n'
        'class Good:\n    """Documented."""\n    def run(self) -> None:\n        """Runs."""\n'
        'class Half:\n    """Documented, but not its method."""\n    def run(self) -> None: ...\n'
        '    def _private(self) -> None: ...\n'
    )
    loader = griffe.GriffeLoader(search_paths=[str(tmp_path)])
    loader.load("undocumented")
    missing = _hooks().missing_docstrings(loader.modules_collection, "undocumented")
    assert missing == ["undocumented.bare", "undocumented.Half.run", "undocumented.LIMIT"]
