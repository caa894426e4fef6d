"""Random schedules on an in-process channel agree with a small model of the channel's rules."""

from __future__ import annotations

import asyncio
from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from aqueduct import ChannelCancelled, ChannelClosed, ChannelFinished, ReceiverDropped, WouldBlock, channel

CAPACITY = 3
ops = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.integers(0, 99)),
        st.tuples(st.just("recv"), st.none()),
        st.tuples(st.just("finish"), st.none()),
        st.tuples(st.just("cancel"), st.none()),
        st.tuples(st.just("close"), st.none()),
    ),
    max_size=40,
)


async def _run(schedule: list[tuple[str, int | None]]) -> None:
    tx, rx = channel(capacity=CAPACITY)
    queue: deque[int] = deque()
    sender_done = receiver_closed = False
    end: str | None = None  # "finished" | "cancelled"
    for op, arg in schedule:
        if op == "send":
            if sender_done:
                expected: type[Exception] | None = ChannelClosed
            elif receiver_closed:
                expected = ReceiverDropped
            elif len(queue) >= CAPACITY:
                expected = WouldBlock
            else:
                expected = None
            try:
                tx.try_send(arg)
                assert expected is None
                assert arg is not None
                queue.append(arg)
            except (ChannelClosed, ReceiverDropped, WouldBlock) as exc:
                assert type(exc) is expected
        elif op == "recv":
            if receiver_closed:
                try:
                    await rx.recv()
                    raise AssertionError("recv on a closed receiver")
                except ChannelClosed:
                    pass
            elif queue:
                assert await rx.recv() == queue.popleft()
            elif end == "finished":
                try:
                    await rx.recv()
                    raise AssertionError("recv after the end")
                except ChannelFinished:
                    pass
            elif end == "cancelled":
                try:
                    await rx.recv()
                    raise AssertionError("recv after cancel")
                except ChannelCancelled:
                    pass
            # else: recv would wait forever; the model skips it
        elif op in ("finish", "cancel"):
            try:
                if op == "finish":
                    await tx.finish()
                else:
                    tx.cancel()
                assert not sender_done
                sender_done = True
                end = end or ("finished" if op == "finish" else "cancelled")
                if op == "cancel":
                    queue.clear()  # a cancel discards what the receiver has not taken
            except ChannelClosed:
                assert sender_done
        elif op == "close":
            rx.close()
            receiver_closed = True
            queue.clear()


@settings(max_examples=150, deadline=None)
@given(ops)
def test_local_channel_follows_the_model(schedule: list[tuple[str, int | None]]) -> None:
    asyncio.run(_run(schedule))
