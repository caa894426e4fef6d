"""The receiver's application queue: its two bounds, and the bytes it counts through every way in and out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aqueduct.core.app import Delivered, Delivery
from aqueduct.core.queue import MessageQueue, Queued


def _item(n: int, size: int) -> Queued:
    return Delivered(bytes(size), (), 0, n, Delivery.ORDERED), 4, size + 3


def test_offer_refuses_beyond_either_bound_and_changes_nothing() -> None:
    q = MessageQueue(max_messages=2, max_bytes=10)
    assert q.offer(_item(0, 6), 6)
    assert not q.offer(_item(1, 5), 5)  # 11 bytes
    assert (len(q), q.nbytes) == (1, 6)
    assert q.offer(_item(1, 4), 4)
    assert not q.offer(_item(2, 0), 0)  # a third message
    assert (len(q), q.nbytes) == (2, 10)
    assert not q.has_room(1, 0) and not MessageQueue(5, 10).has_room(1, 11)


def test_fitting_counts_the_leading_payloads_that_fit() -> None:
    q = MessageQueue(max_messages=4, max_bytes=10)
    q.put(_item(0, 3), 3)
    assert q.fitting([bytes(3), bytes(3), bytes(3)]) == (2, 6)  # the third would make 12 bytes
    assert q.fitting([bytes(1)] * 5) == (3, 3)  # a fourth message at most
    assert q.fitting([bytes(8)]) == (0, 0)


_op = st.one_of(st.tuples(st.just("put"), st.integers(0, 50)), st.tuples(st.just("take"), st.integers(0, 4)))


@given(st.lists(_op))
def test_the_byte_count_is_the_sum_of_what_is_queued(ops: list[tuple[str, int]]) -> None:
    q = MessageQueue(max_messages=8, max_bytes=200)
    taken: list[Queued] = []
    for n, (op, arg) in enumerate(ops):
        if op == "put":
            q.offer(_item(n, arg), arg)
        elif arg == 1 and q:
            taken.append(q.take())
        else:
            taken += q.take_many(arg)
        assert q.nbytes == sum(len(d.payload) for d, _, _ in q)
        assert len(q) <= 8 and q.nbytes <= 200
    assert [d.number for d, _, _ in taken] == sorted(d.number for d, _, _ in taken)
