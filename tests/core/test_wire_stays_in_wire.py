"""Wire knowledge stays in aqueduct/wire: the engine speaks in the wire's named frames, helpers and ChannelId
properties, never in frame bytes, channel-ID bit masks or var len int arithmetic.

Checked on the syntax tree of every module of aqueduct/core: no non-empty bytes literal (a frame type byte or
an encoded frame), no import from wire.varint (its tables and arithmetic), no 0x7F/0x80/127/128 constant (the
var len int's continuation bit), and no bit operation on a channel ID. Outside core the last rule holds for
the whole package: no layer above the wire picks channel IDs apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import aqueduct

ROOT = Path(aqueduct.__file__).parent
CORE = sorted((ROOT / "core").glob("*.py"))
ABOVE_WIRE = sorted(p for p in ROOT.rglob("*.py") if "wire" not in p.relative_to(ROOT).parts)
_BIT_OPS = (ast.BitAnd, ast.RShift, ast.LShift)
_VARINT_CONSTANTS = {0x7F, 0x80}


def _channel_bit_ops(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, _BIT_OPS):
            text = ast.unparse(node)
            if "channel" in text or "cid" in text:
                found.append(f"line {node.lineno}: {text}")
    return found


def _wire_knowledge(tree: ast.AST) -> list[str]:
    found = _channel_bit_ops(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes) and node.value:
            found.append(f"line {node.lineno}: bytes literal {node.value!r}")
        elif isinstance(node, ast.Constant) and type(node.value) is int and node.value in _VARINT_CONSTANTS:
            found.append(f"line {node.lineno}: var len int constant {node.value}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("wire.varint"):
            found.append(f"line {node.lineno}: imports wire.varint")
    return found


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.name)
def test_core_module_holds_no_wire_knowledge(path: Path) -> None:
    assert _wire_knowledge(ast.parse(path.read_text())) == []


@pytest.mark.parametrize("path", ABOVE_WIRE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_above_the_wire_picks_channel_ids_apart(path: Path) -> None:
    assert _channel_bit_ops(ast.parse(path.read_text())) == []


def test_the_checks_catch_what_they_forbid() -> None:
    bad = ast.parse(
        'head = b"\\x03" + x\nif channel & 4: pass\nsmall = n < 0x80\nfrom ..wire.varint import SMALL_VARINTS\n'
    )
    assert len(_wire_knowledge(bad)) == 4
