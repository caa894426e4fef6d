"""The engine's small parts: RangeSet, Timers, CreationLinks, the ack ledgers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aqueduct.core.acks import ReceiveAcks, SendAcks, settle_fresh
from aqueduct.core.creation import CreationLinks
from aqueduct.core.rangeset import RangeSet
from aqueduct.core.timers import Timers
from aqueduct.wire.errors import CloseCode, ProtocolError


@pytest.mark.spec("encoding.ranges")
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 8)), max_size=30), st.integers(0, 70))
def test_rangeset_matches_a_plain_set(adds: list[tuple[int, int]], probe: int) -> None:
    rs = RangeSet()
    plain: set[int] = set()
    for a, n in adds:
        rs.add(a, a + n)
        plain.update(range(a, a + n))
    assert rs.count() == len(plain)
    assert (probe in rs) == (probe in plain)
    end = probe
    while end in plain:
        end += 1
    assert rs.prefix_end(probe) == end
    runs = list(rs.runs(0, 80))
    assert [n for a, b, inside in runs if inside for n in range(a, b)] == sorted(n for n in plain if n < 80)
    rs.discard_below(probe)
    assert rs.count() == len([n for n in plain if n >= probe])


def test_timers_fire_in_order_and_can_move_or_cancel() -> None:
    t = Timers()
    t.set("a", 3.0)
    t.set("b", 1.0)
    t.set("c", 2.0)
    t.set("a", 0.5)
    t.cancel("c")
    assert t.next() == 0.5
    assert t.due(1.0) == ["a", "b"]
    assert t.next() is None and len(t) == 0
    t.set_earlier("d", 5.0)
    t.set_earlier("d", 6.0)
    assert t.next() == 5.0


@pytest.mark.spec("reachable", "cascading-loss")
def test_links_reachability_and_cascade() -> None:
    links = CreationLinks()
    links.add_unreachable(2, 10, True)
    links.add_link(1, 0, (True, 0), [2])  # entrypoint's message 0 created half 2
    links.add_unreachable(3, 11, False)
    links.add_link(2, 10, (True, 0), [3])
    links.acked(2, [(True, 0)], lambda n: None)  # acked while 2 is unreachable: remembered
    reached: list[int] = []
    links.acked(1, [(True, 0)], reached.append)
    assert reached == [2, 3] and len(links) == 0
    links.add_unreachable(4, 12, True)
    links.add_link(1, 0, (False, 0), [4])
    links.add_unreachable(5, 13, False)
    links.add_link(4, 12, (True, 0), [5])
    lost: list[int] = []
    links.nacked(1, [(False, 0)], lambda n, node: lost.append(n))
    assert sorted(lost) == [4, 5] and len(links) == 0


@given(st.integers(0, 50), st.integers(0, 50))
def test_a_sender_without_a_ledger_settles_as_a_fresh_ledger_would(next_rel: int, next_unrel: int) -> None:
    assert settle_fresh(next_rel, next_unrel) == SendAcks().settle_all(next_rel, next_unrel)


def test_the_ledgers_count_the_ranges_a_cap_would_bound() -> None:
    acks = ReceiveAcks()
    for n in (0, 2, 4, 6):
        acks.mark_reliable(n)
    acks.unrel_received.add(1, 2)
    assert acks.ranges_held() == 4 + 3 + 1  # pending 0,2,4,6; done 2,4,6 above the prefix; one unreliable
    assert acks.check_caps(8, 0) is False and acks.check_caps(7, 0) is True  # the unreliable range trims
    with pytest.raises(ProtocolError) as err:
        acks.check_caps(6, 0)  # the reliable ones alone pass it
    assert err.value.code == CloseCode.LIMIT_EXCEEDED
    tx = SendAcks()
    tx.ack_reliable((1, 1, 1), 10, 0)  # acks 0 and 2: one range above the prefix
    assert tx.ranges_held() == 1
    tx.check_caps(1, 0)
    with pytest.raises(ProtocolError):
        tx.check_caps(0, 0)


def test_nack_oldest_lets_the_oldest_unreliable_holes_be_decided() -> None:
    acks = ReceiveAcks()
    for n in range(0, 20, 2):
        acks.unrel_received.add_one(n)
    acks.nack_oldest(3)
    acks.take_acknack(acks.decided_end())
    assert len(acks.unrel_received) == 2 and acks.unrel_start == 15  # the boundary range is acked too


def test_timer_keys_are_a_kind_and_a_handle() -> None:
    """Every deadline the engine arms is keyed by a TimerKind (an enum, dispatched by `Engine.handle_timer`),
    never by a string: each literal key tuple in aqueduct/core starts with one of the kinds' constants."""
    import ast
    from pathlib import Path

    import aqueduct
    from aqueduct.core import timers

    kinds = {kind.name for kind in timers.TimerKind}
    assert kinds == {"SENT_UNRELIABLE", "PARTIAL_FRAME", "ACKS"}
    assert all(getattr(timers, name) is timers.TimerKind[name] for name in kinds)
    keys = []
    for path in sorted((Path(aqueduct.__file__).parent / "core").glob("*.py")):  # (the sources, compiled or not)
        tree = ast.parse(path.read_text())
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr in ("set", "set_earlier", "cancel", "armed_at")]
        named = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "key" for t in n.targets)]
        for node in [arg for call in calls for arg in call.args[:1]] + named:
            if isinstance(node, ast.Tuple) and len(node.elts) == 2:
                first = node.elts[0]
                named_kind = isinstance(first, ast.Name) and first.id in kinds
                keys.append("kind" if named_kind else f"{path.name}:{node.lineno}")
    assert keys and set(keys) == {"kind"}, keys
