"""MkDocs hooks of the documentation site (mkdocs.yml names this file); nothing here runs at library run time.

Theory of operation. The site is the guides in docs/ plus pages made at build time, so that nothing is
copied by hand and nothing can go stale:

- the home page is README.md, its links into docs/ made relative to the site;
- the API reference: one page per public name, the `__all__` of each package in REFERENCE, rendered by
  mkdocstrings from the docstrings. The same griffe load checks that every public name, and every public
  method and property of a public class, has a docstring: a missing one is a warning, so
  `mkdocs build --strict` fails on it (tests/docs/test_site.py builds the site that way). A method whose
  docstring begins "Wiring:" is the library's (a Sender's `bind`): its class's page leaves it out;
- the command line: one page per command and subcommand of `aqueduct` and `aeron_compat`, the text its
  `--help` prints, taken from the parsers themselves;
- the flame graphs of benchmarks/profiles/, which the Performance page shows: a guide links them as
  `../benchmarks/profiles/NAME.svg` (right when the Markdown is read in the repository) and the
  site serves them under `benchmarks/profiles/`;
- the TypeScript client's API reference, TypeDoc's HTML under `typescript-api/` (scripts/typedoc_site.py).

The nav entries of the generated pages are appended in `on_config`, from the same lists.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).resolve().parents[1]


def _beside(name: str) -> Any:
    """A module of scripts/ (this file is loaded by path, by MkDocs and by tests/docs, not as a package)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


typedoc_site = _beside("typedoc_site")

# package -> what its reference section says it is
REFERENCE = {
    "aqueduct": "Typed channels over QUIC: connect, serve, senders, receivers, codecs, errors, configuration.",
    "aqueduct.testing": "The deterministic simulator and random-application driver for your own tests.",
    "aeron_compat": "The Aeron programming model on Aqueduct channels.",
    "aeron_compat.bymux": "bymux: many byte streams over one reliable ordered byte channel.",
    "aeron_compat.marlin": "Marlin Stream: reliable ordered byte streams over UDP.",
}
# command -> the module whose build_parser() makes its parser
COMMANDS = {"aqueduct": "aqueduct.cli", "aeron_compat": "aeron_compat.tools.cli"}
PUBLISHED = "benchmarks/profiles"  # repository files the site serves as they are
HELP_COLUMNS = "100"  # --help is wrapped at this width on the command pages

log = logging.getLogger("mkdocs.hooks.aqueduct")


# --- the API reference -------------------------------------------------------------------------------------------


@functools.cache
def packages() -> griffe.ModulesCollection:
    """The reference's packages as griffe (and so mkdocstrings) reads them, from this repository's tree."""
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)])
    for top in sorted({name.partition(".")[0] for name in REFERENCE}):
        loader.load(top)
    loader.resolve_aliases(implicit=False, external=None)
    return loader.modules_collection


def public_names(collection: griffe.ModulesCollection, package: str) -> list[str]:
    """A package's public names: its `__all__`, in order."""
    exports = collection[package].exports
    if not exports:
        raise ValueError(f"{package} has no __all__: the reference lists exactly the public names")
    return [str(name) for name in exports]


def _target(obj: griffe.Object | griffe.Alias) -> griffe.Object | griffe.Alias:
    return obj.final_target if obj.is_alias else obj


def missing_docstrings(collection: griffe.ModulesCollection, package: str) -> list[str]:
    """Every public name of `package` without a docstring, and every public method or property of its public
    classes without one (attributes of a class, such as dataclass fields or enum members, are not required)."""
    missing = []
    for name in public_names(collection, package):
        try:
            obj = _target(collection[package][name])
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            missing.append(f"{package}.{name} (not found)")
            continue
        if not obj.docstring:
            missing.append(f"{package}.{name}")
        if obj.is_class:
            for member_name, member in obj.members.items():
                if member_name.startswith("_") or member.is_alias:
                    continue
                if (member.is_function or "property" in member.labels) and not member.docstring:
                    missing.append(f"{package}.{name}.{member_name}")
    return missing


def _slugs(collection: griffe.ModulesCollection, package: str) -> dict[str, str]:
    """name -> page file name; two names differing only by case would clash on a case-insensitive file system,
    so a package may not have them (one public name per concept)."""
    names = public_names(collection, package)
    lowered = [n.lower() for n in names]
    clashes = sorted(n for n in names if lowered.count(n.lower()) > 1)
    if clashes:
        raise ValueError(f"{package}: public names differing only by case: {clashes}")
    return {name: name for name in names}


def _summary(obj: griffe.Object | griffe.Alias) -> str:
    doc = obj.docstring.value.strip() if obj.docstring else ""
    first = doc.split("\n\n", 1)[0].replace("\n", " ")
    return first.replace("|", r"\|")


WIRING = "Wiring:"
"""How the docstring of a public method that only the library calls begins (a half's port moves): the
reference leaves those out of their class's page, which shows what an application calls."""


def _directive(path: str, obj: griffe.Object | griffe.Alias) -> str:
    """The mkdocstrings directive of one reference page: a class's wiring members filtered out, and its bases
    left unshown when every one is private (`Bases: _Half` tells a reader nothing they can use)."""
    wiring = sorted(
        name
        for name, member in (obj.members.items() if obj.is_class else ())
        if not member.is_alias and member.docstring and member.docstring.value.startswith(WIRING)
    )
    options = []
    if wiring:
        options.append(f"      filters: [\"!^_\", \"!^({'|'.join(wiring)})$\"]\n")
    bases = [str(base).split("[", 1)[0].rsplit(".", 1)[-1] for base in obj.bases] if obj.is_class else []
    shown = [base for base in bases if base != "Generic"]  # (typing's machinery: the signature shows the T)
    if shown and all(base.startswith("_") for base in shown):
        options.append("      show_bases: false\n")
    return f"::: {path}\n" + (f"    options:\n{''.join(options)}" if options else "")


def reference_pages() -> dict[str, str]:
    """src path -> Markdown of every API reference page."""
    collection = packages()
    pages = {"reference/index.md": _reference_index()}
    for package, about in REFERENCE.items():
        slugs = _slugs(collection, package)
        rows = []
        for name, slug in slugs.items():
            obj = _target(collection[package][name])
            rows.append(f"| [`{name}`]({slug}.md) | {obj.kind.value} | {_summary(obj)} |")
            pages[f"reference/{package}/{slug}.md"] = _directive(f"{package}.{name}", obj)
        pages[f"reference/{package}/index.md"] = (
            f"# {package}\n\n{about}\n\n| Name | Kind | Summary |\n| --- | --- | --- |\n" + "\n".join(rows) + "\n"
        )
    return pages


def _reference_index() -> str:
    lines = ["# API reference", "",
             "Generated from the docstrings of every public name (each package's `__all__`).", ""]
    lines += [f"- [`{package}`]({package}/index.md): {about}" for package, about in REFERENCE.items()]
    return "\n".join(lines) + "\n"


# --- the command line --------------------------------------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _commands(prog: str, parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield prog, parser
    for name, sub in _subparsers(parser):
        yield from _commands(f"{prog} {name}", sub)


def command_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command and subcommand ("aqueduct serve", "aeron_compat stream listen", ...) with its parser."""
    found = []
    for prog, module in COMMANDS.items():
        found += list(_commands(prog, importlib.import_module(module).build_parser()))
    return found


def help_text(parser: argparse.ArgumentParser) -> str:
    """What `--help` prints, at the pages' width."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        return parser.format_help()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def command_pages() -> dict[str, str]:
    """src path -> Markdown of every command page."""
    commands = command_parsers()
    pages = {}
    index = ["# Command line", "",
             "Each page is what the command's `--help` prints, taken from its parser at build time.", ""]
    for prog, parser in commands:
        slug = prog.replace(" ", "-")
        children = [child for child, _ in commands if child.rsplit(" ", 1)[0] == prog and child != prog]
        more = "".join(f"- [`{child}`]({child.replace(' ', '-')}.md)\n" for child in children)
        pages[f"reference/cli/{slug}.md"] = (
            f"# {prog}\n\n```text\n$ {prog} --help\n{help_text(parser).rstrip()}\n```\n"
            + (f"\nSubcommands:\n\n{more}" if more else "")
        )
        depth = prog.count(" ")
        index.append(f"{'    ' * depth}- [`{prog}`]({slug}.md)")
    pages["reference/cli/index.md"] = "\n".join(index) + "\n"
    return pages


# --- the hooks -----------------------------------------------------------------------------------------------------


def _nav() -> list[Any]:
    collection = packages()
    api: list[Any] = ["reference/index.md"]
    for package in REFERENCE:
        slugs = _slugs(collection, package)
        pages = [{name: f"reference/{package}/{slug}.md"} for name, slug in slugs.items()]
        api.append({package: [f"reference/{package}/index.md", *pages]})
    cli = ["reference/cli/index.md", *(f"reference/cli/{prog.replace(' ', '-')}.md" for prog, _ in command_parsers())]
    return [{"API reference": api}, {"Command line": cli}]


def on_config(config: Any) -> Any:
    packages.cache_clear()  # `mkdocs serve` rebuilds in one process: read the packages afresh
    collection = packages()
    for package in REFERENCE:
        for name in missing_docstrings(collection, package):
            log.warning("public name without a docstring: %s", name)
    config.nav = [*config.nav, *_nav()]
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    generated = {"index.md": _home(), **reference_pages(), **command_pages()}
    for src, content in generated.items():
        files.append(File.generated(config, src, content=content))
    for path in sorted((ROOT / PUBLISHED).iterdir()):
        files.append(File.generated(config, f"{PUBLISHED}/{path.name}", abs_src_path=str(path)))
    for file in typedoc_site.files(config):
        files.append(file)
    return files


def _home() -> str:
    """README.md with its links into docs/ made site-relative (README links `docs/x.md`, the site has `x.md`)."""
    return re.sub(r"\]\(docs/", "](", (ROOT / "README.md").read_text())


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return markdown.replace(f"](../{PUBLISHED}/", f"]({PUBLISHED}/")
