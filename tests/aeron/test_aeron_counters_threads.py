"""Counters updated from several threads at once lose no increments."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from aeron_compat import Aeron, Context
from aeron_compat.client.counters import Counters


@pytest.fixture
def fast_switching() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up at once
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def test_add_from_many_threads_is_exact(fast_switching: None) -> None:
    counters = Counters()

    def work() -> None:
        for _ in range(20_000):
            counters.add("errors")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counters.get("errors") == 80_000


def test_offers_and_polls_on_two_threads_count_every_message(fast_switching: None) -> None:
    n = 5_000
    with Aeron.connect(Context(counters_interval=0, udp_media="loopback")) as aeron:
        pubs = [aeron.add_exclusive_publication("aeron:ipc?term-length=1m", 3) for _ in range(2)]
        subs = [aeron.add_subscription(f"aeron:ipc?session-id={p.session_id}", 3) for p in pubs]

        def work(i: int) -> None:
            sent = got = 0
            while got < n:
                if sent < n and pubs[i].offer(b"x" * 8) > 0:
                    sent += 1
                got += subs[i].poll(lambda b, h: None, 10)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        c = aeron.counters
        assert c["messages_sent"] == 2 * n and c["bytes_sent"] == c["bytes_received"] == 2 * n * 64
        for p in pubs:
            p.close()
        assert aeron.counters["messages_sent"] == 2 * n  # folded in when the logs closed
