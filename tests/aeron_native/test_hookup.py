"""`transport=native` channels through aeron_compat's `Aeron` client, over loopback UDP."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from aeron_compat import NOT_CONNECTED, Aeron, FragmentAssembler, Header, MessageTooLongError, Subscription
from aeron_compat.client.uri import ChannelUri, InvalidChannelError
from aeron_compat.native.publication import NativePublication
from aeron_compat.native.subscription import NativeSubscription

pytestmark = pytest.mark.timeout(60)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pump(subs: list[Subscription], handlers: Sequence[Any], done: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        if not sum(s.poll(h, 64) for s, h in zip(subs, handlers, strict=True)):
            time.sleep(0.0005)


def test_transport_native_selects_the_native_classes_and_round_trips() -> None:
    port = free_port()
    channel = f"aeron:udp?endpoint=127.0.0.1:{port}|transport=native|term-length=64k"
    events: list[str] = []
    with Aeron.connect() as aeron:
        sub = aeron.add_subscription(channel, 5, on_available_image=lambda i: events.append("up"),
                                     on_unavailable_image=lambda i: events.append("down"))
        pub = aeron.add_exclusive_publication(channel, 5)
        assert isinstance(sub, NativeSubscription) and isinstance(pub, NativePublication)
        msgs = [b"small", bytes(range(256)) * 28, b""]
        got: list[tuple[bytes, int]] = []

        def on_message(buf: memoryview, header: Header) -> None:
            got.append((bytes(buf), header.session_id))

        assembler = FragmentAssembler(on_message)
        deadline = time.monotonic() + 10
        for m in msgs:
            while pub.offer(m) < 0:
                assert time.monotonic() < deadline
                time.sleep(0.001)
        pump([sub], [assembler], lambda: len(got) == len(msgs))
        assert got == [(m, pub.session_id) for m in msgs]
        assert pub.position == sub.images[0].position
        with pytest.raises(MessageTooLongError):
            pub.offer(bytes(8193))
        pub.close()
        pump([sub], [assembler], lambda: events == ["up", "down"])


def test_dynamic_and_manual_multi_destination_cast_over_udp() -> None:
    control = free_port()
    a, b = free_port(), free_port()
    with Aeron.connect() as aeron:
        subs = [aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{p}|control=127.0.0.1:{control}"
                                       "|transport=native", 6) for p in (a, b)]
        pub = aeron.add_publication(f"aeron:udp?control=127.0.0.1:{control}|transport=native", 6)
        got: list[list[bytes]] = [[], []]
        handlers = [lambda buf, h, i=i: got[i].append(bytes(buf)) for i in range(2)]
        pump(subs, handlers, lambda: pub.is_connected and len(pub.destinations) == 2)
        for i in range(20):
            while pub.offer(b"dyn%d" % i) < 0:
                time.sleep(0.001)
        pump(subs, handlers, lambda: len(got[0]) == len(got[1]) == 20)
        assert got[0] == got[1] == [b"dyn%d" % i for i in range(20)]

        manual_control = free_port()
        c = free_port()
        msub = aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{c}|transport=native", 7)
        mpub = aeron.add_publication(f"aeron:udp?control=127.0.0.1:{manual_control}|control-mode=manual"
                                     "|transport=native", 7)
        mpub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{c}")
        mgot: list[bytes] = []
        deadline = time.monotonic() + 10
        while mpub.offer(b"manual") < 0:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        pump([msub], [lambda buf, h: mgot.append(bytes(buf))], lambda: bool(mgot))
        assert mgot == [b"manual"]
        mpub.remove_destination(f"aeron:udp?endpoint=127.0.0.1:{c}")
        assert mpub.destinations == []


def test_transport_parameter_is_validated() -> None:
    assert ChannelUri.parse("aeron:udp?endpoint=localhost:1|transport=native").get("transport") == "native"
    with pytest.raises(InvalidChannelError, match="transport"):
        ChannelUri.parse("aeron:udp?endpoint=localhost:1|transport=carrier-pigeon")


def test_two_sessions_on_one_endpoint_and_a_session_filter() -> None:
    port, other = free_port(), free_port()
    with Aeron.connect() as aeron:
        sub = aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}|transport=native", 8)
        pubs = [aeron.add_exclusive_publication(f"aeron:udp?endpoint=127.0.0.1:{port}|transport=native"
                                                f"|session-id={s}", 8) for s in (111, 222)]
        only = aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{other}|session-id=222|transport=native", 8)
        others = [aeron.add_exclusive_publication(f"aeron:udp?endpoint=127.0.0.1:{other}|transport=native"
                                                  f"|session-id={s}", 8) for s in (111, 222)]
        got: list[tuple[int, bytes]] = []
        filtered: list[int] = []

        def on_fragment(buf: memoryview, header: Header) -> None:
            got.append((header.session_id, bytes(buf)))

        deadline = time.monotonic() + 10
        for i in range(10):
            for pub in pubs + others[1:] * (i == 0):
                while pub.offer(b"%d" % i) < 0:
                    assert time.monotonic() < deadline
                    time.sleep(0.001)
        pump([sub, only], [on_fragment, lambda buf, h: filtered.append(h.session_id)],
             lambda: len(got) == 20 and bool(filtered))
        assert sorted(i.session_id for i in sub.images) == [111, 222]
        for session in (111, 222):
            assert [m for s, m in got if s == session] == [b"%d" % i for i in range(10)]
        assert [i.session_id for i in only.images] == [222] and filtered == [222]
        assert others[0].offer(b"unheard") == NOT_CONNECTED  # the filter never answered session 111


def test_try_claim_commits_with_reserved_value_and_aborts() -> None:
    port = free_port()
    channel = f"aeron:udp?endpoint=127.0.0.1:{port}|transport=native"
    with Aeron.connect() as aeron:
        sub = aeron.add_subscription(channel, 9)
        pub = aeron.add_exclusive_publication(channel, 9)
        deadline = time.monotonic() + 10
        while not pub.is_connected:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        with pytest.raises(RuntimeError), pub.try_claim(4) as aborted:
            aborted.put_bytes(b"nope")
            raise RuntimeError("handler failed: the claim is aborted")
        assert aborted and aborted.committed is False
        with pub.try_claim(5) as claim:
            claim.put_bytes(b"yes")
            claim.put_bytes(b"!!", 3)
            claim.reserved_value = 7
        assert claim.committed and claim.position == pub.position
        got: list[tuple[bytes, int]] = []
        pump([sub], [lambda buf, h: got.append((bytes(buf), h.reserved_value))], lambda: bool(got))
        assert got == [(b"yes!!", 7)]
