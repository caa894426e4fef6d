"""The binding of a half (halves/bindings.py): one object says where a half talks and carries what sending and
receiving do there; it changes only by the moves of BINDING_MOVES (`move`, the one writer); a local pair shares
one binding, ending a half keeps where it talked, moving one rebinds both halves in one step, and a move the
table does not connect raises IllegalTransition."""

from __future__ import annotations

import ast
import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest

import aqueduct
from aqueduct.api.halves import bindings, channel
from aqueduct.api.halves.bindings import BINDING_MOVES, MOVED, Closed, Local, Moved, Networked, Unwired, move
from aqueduct.api.halves.wiring import bind
from aqueduct.core.transitions import IllegalTransition
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running

HALVES = Path(bindings.__file__).parent


def test_the_table_names_every_binding_and_a_moved_half_is_final() -> None:
    assert set(BINDING_MOVES) == {Unwired, Local, Networked, Closed, Moved}
    assert all(to <= set(BINDING_MOVES) for to in BINDING_MOVES.values())
    assert BINDING_MOVES[Moved] == frozenset()
    assert Local not in BINDING_MOVES[Networked]  # a networked half never goes back to a pipe


def _type_tests(tree: ast.AST, kinds: set[str]) -> list[int]:
    """Lines of `isinstance(x, K)` and `type(x) is K` (`is not`, `==`) with K a binding class."""
    def names(node: ast.AST) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                and len(node.args) == 2 and names(node.args[1]) & kinds:
            found.append(node.lineno)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Call) and \
                isinstance(node.left.func, ast.Name) and node.left.func.id == "type" and \
                any(names(c) & kinds for c in node.comparators):
            found.append(node.lineno)
    return found


def test_move_is_the_one_writer_of_a_binding_and_the_halves_test_no_binding_type() -> None:
    """Only `bindings.move` assigns `_binding` (besides `_Half.__init__`); the halves (sender.py, receiver.py,
    oneshot.py) and the bindings themselves ask a binding and never test its type."""
    kinds = {"Unwired", "Local", "Networked", "Closed", "Moved"}
    writers, tests = [], []
    for path in sorted(HALVES.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign | ast.AugAssign) else []
            writers += [f"{path.name}:{node.lineno}" for target in targets
                        if isinstance(target, ast.Attribute) and target.attr == "_binding"]
        if path.name in ("sender.py", "receiver.py", "oneshot.py", "bindings.py"):
            tests += [f"{path.name}:{line}" for line in _type_tests(tree, kinds)]
    assert [w.split(":")[0] for w in writers] == ["bindings.py", "bindings.py"]  # `_Half.__init__` and `move`
    assert tests == []
    assert _type_tests(ast.parse("isinstance(b, Local)\ntype(b) is Networked\ntype(b) is int\n"), kinds) == [1, 2]


async def test_a_local_pair_shares_one_binding_and_ending_keeps_where_it_talked() -> None:
    tx, rx = channel()
    assert isinstance(tx._binding, Local) and tx._binding is rx._binding
    assert tx._binding.drops and tx._binding.link is None and tx._binding.done is None
    await tx.finish()
    ended = tx._binding
    assert isinstance(ended, Closed) and ended.done == "finished" and ended.was is rx._binding
    assert not ended.drops  # a local half ended by hand has nothing left to tell when collected
    rx.close()
    assert isinstance(rx._binding, Closed) and rx._binding.done == "closed"


async def test_a_move_the_table_does_not_connect_raises() -> None:
    tx, rx = channel()
    move(tx, MOVED)
    assert isinstance(tx._binding, Moved) and tx._binding.done == "moved into a message"
    with pytest.raises(aqueduct.ChannelClosed, match="moved into a message"):
        await tx.send(1)
    with pytest.raises(IllegalTransition):
        bind(tx, object(), 0)  # type: ignore[arg-type]
    with pytest.raises(IllegalTransition):
        move(tx, Local(rx._binding.pipe))  # type: ignore[union-attr]
    rx.close()
    with pytest.raises(IllegalTransition):
        move(rx, MOVED)  # a closed half cannot travel (attach_kind refuses it before this)


async def test_a_half_made_by_hand_is_unwired_and_says_so() -> None:
    tx: aqueduct.Sender[Any] = aqueduct.Sender()
    rx: aqueduct.Receiver[Any] = aqueduct.Receiver()
    with pytest.raises(aqueduct.ChannelClosed, match="not wired"):
        await tx.send(1)
    with pytest.raises(aqueduct.ChannelClosed, match="not wired"):
        await rx.recv()
    assert await tx.ended() is aqueduct.EndReason.CLOSED
    rx.close()
    assert isinstance(rx._binding, Closed)


async def test_moving_a_half_rebinds_both_and_a_networked_end_keeps_its_drop(certs: DevCerts) -> None:
    got: asyncio.Queue[Any] = asyncio.Queue()

    async def handler(conn: aqueduct.Connection) -> None:
        async for req in conn.entrypoint:
            got.put_nowait(await req["rx"].recv())

    async with running(certs, handler) as (url, _), aqueduct.connect(url, ca=certs.ca) as conn:
        tx, rx = channel()
        await tx.send("queued before the move")
        await conn.entrypoint.send({"rx": rx})
        assert isinstance(rx._binding, Moved) and not rx._binding.drops
        net = tx._binding
        assert isinstance(net, Networked) and net.pipe is None and net.drops and tx.networked
        assert await guard(got.get()) == "queued before the move"
        tx.cancel()
        ended = tx._binding
        assert isinstance(ended, Closed) and ended.was is net
        assert ended.drops  # dropping it still lets the engine forget the channel
        assert tx.networked
        del tx, rx
        gc.collect()
