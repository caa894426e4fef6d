"""`aqueduct --help` and every subcommand's: each option says what it does, and defaults read as text."""

from __future__ import annotations

import argparse
import re

from aqueduct.cli import _COMMANDS, build_parser


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _all_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for name, parser in _subparsers(build_parser()).items():
        found.append((name, parser))
        if any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
            found.extend((f"{name} {sub}", p) for sub, p in _subparsers(parser).items())
    return found


def test_every_subcommand_is_listed_with_a_help_line() -> None:
    text = build_parser().format_help()
    for name in _COMMANDS:
        assert f"    {name} " in text


def test_every_option_has_help_and_no_python_reprs() -> None:
    for name, parser in _all_parsers():
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help, f"aqueduct {name}: {action.option_strings or action.dest} has no help"
        text = parser.format_help()
        assert not re.search(r"default:? [(\[]'", text), f"aqueduct {name} --help shows a Python repr"


def test_an_option_name_means_one_thing_in_every_subcommand() -> None:
    """`--limit` was NAME=VALUE on `serve` and a row count on `analyze` and `report`: one name, one meaning."""
    seen: dict[str, set[tuple[str, str, str]]] = {}
    for _, parser in _all_parsers():
        for action in parser._actions:
            kind = (type(action).__name__, getattr(action.type, "__name__", str(action.type)), str(action.metavar))
            for option in action.option_strings:
                seen.setdefault(option, set()).add(kind)
    assert {o: k for o, k in seen.items() if len(k) > 1} == {}


def test_no_subcommand_takes_one_setting_by_two_options() -> None:
    """`report` took both `--html FILE` and `-o FILE` for its one output."""
    for name, parser in _all_parsers():
        dests = [a.dest for a in parser._actions if a.option_strings and a.dest != "help"]
        assert len(dests) == len(set(dests)), f"aqueduct {name}: {sorted(d for d in dests if dests.count(d) > 1)}"
