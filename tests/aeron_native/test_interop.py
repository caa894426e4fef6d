"""Interop with a real Aeron media driver (pyaeron's embedded C driver) over loopback UDP.

The real peer runs in its own Python 3.12 process (see aeron_compat/native/interop.py); an
impairment proxy in this process sits between the peers, recording frames and dropping some.
"""

from __future__ import annotations

import functools
import socket
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aeron_compat import NOT_CONNECTED, Aeron, FragmentAssembler, Publication, Subscription
from aeron_compat.native.codec import decode_datagram
from aeron_compat.native.driver import NativeDriver
from aeron_compat.native.frames import Nak
from aeron_compat.native.interop import RealPeer
from aeron_compat.native.proxy import ImpairmentProxy
from aeron_compat.native.publication import NativePublication
from aeron_compat.native.publisher import OfferCode
from aeron_compat.native.subscription import NativeSubscription
from aeron_native.simnet import message
from tests.system_deps import requires_system

pytestmark = pytest.mark.timeout(120)
MAX_PAYLOAD = 1408 - 32
SIZES = [0, 10, MAX_PAYLOAD, MAX_PAYLOAD + 1, 5000] + [32] * 1000
STREAM = 1001


@pytest.fixture(scope="module")
def real_python() -> Path:
    return Path(requires_system("aeron"))


@pytest.fixture
def driver() -> Iterator[NativeDriver]:
    with NativeDriver() as d:
        yield d


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def poll_until(sub: Subscription | NativeSubscription, handler: Any, done: Callable[[], bool],
               timeout: float = 30.0) -> None:
    """Poll (idling 0.5 ms between empty polls) until `done()` or fail at `timeout`."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out polling"
        if not sub.poll(handler, 256):
            time.sleep(0.0005)


def offer_all(pub: Publication, msgs: list[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    for m in msgs:
        while pub.offer(m) < 0:
            assert time.monotonic() < deadline, "offers kept failing"
            time.sleep(0.0001)


def keep(into: list[bytes], buf: memoryview, header: object) -> None:
    into.append(bytes(buf))


def has_all(received: list[bytes], count: int) -> bool:
    return len(received) >= count


def drop_one_data_datagram(nth: int = 5) -> Callable[[str, bytes], bool]:
    """On top of random loss: always lose the `nth` datagram carrying data, so a NAK repair is certain."""
    seen = [0]

    def drop(direction: str, data: bytes) -> bool:
        if direction == "to_target" and data[6] == 1 and int.from_bytes(data[:4], "little") > 32:
            seen[0] += 1
            return seen[0] == nth
        return False

    return drop


def naks_in(proxy: ImpairmentProxy) -> int:
    return sum(isinstance(f, Nak) for d, data in proxy.recorded if d == "to_client" for f in decode_datagram(data))


@pytest.mark.parametrize("loss", [0.0, 0.05])
def test_real_publication_to_aeron_compat_subscription(real_python: Path, driver: NativeDriver, loss: float) -> None:
    sub_port = free_port()
    proxy = ImpairmentProxy(driver, ("127.0.0.1", sub_port), loss=loss, seed=7, record=True,
                            drop=drop_one_data_datagram() if loss else None)
    host, port = proxy.address
    msgs = [message(i, s) for i, s in enumerate(SIZES)]
    events: list[str] = []
    with Aeron.connect() as aeron:
        sub = aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{sub_port}|transport=native", STREAM,
                                     on_available_image=lambda img: events.append(f"up {img.session_id}"),
                                     on_unavailable_image=lambda img: events.append(f"down {img.session_id}"))
        got: list[bytes] = []
        assembler = FragmentAssembler(lambda buf, header: got.append(bytes(buf)))
        with RealPeer(real_python, role="pub", channel=f"aeron:udp?endpoint={host}:{port}|term-length=64k",
                      stream=STREAM, sizes=SIZES) as peer:
            session = peer.expect("connected")["session"]
            poll_until(sub, assembler, lambda: len(got) >= len(msgs))
            assert got == msgs
            peer.expect("sent")
            image = sub.images[0]
            peer.send("close")
            poll_until(sub, assembler, lambda: not sub.images)
            assert image.is_end_of_stream
            assert events == [f"up {session}", f"down {session}"]
    if loss:
        assert proxy.dropped > 0 and naks_in(proxy) > 0


@pytest.mark.parametrize("loss", [0.0, 0.05])
def test_native_publication_to_real_subscription(real_python: Path, driver: NativeDriver, loss: float) -> None:
    sub_port = free_port()
    with RealPeer(real_python, role="sub", channel=f"aeron:udp?endpoint=127.0.0.1:{sub_port}", stream=STREAM,
                  count=len(SIZES)) as peer:
        peer.expect("ready")
        proxy = ImpairmentProxy(driver, ("127.0.0.1", sub_port), loss=loss, seed=11, record=True,
                                drop=drop_one_data_datagram() if loss else None)
        host, port = proxy.address
        with Aeron.connect() as aeron:
            pub = aeron.add_publication(f"aeron:udp?endpoint={host}:{port}|term-length=64k|transport=native", STREAM)
            assert pub.offer(b"too early") == NOT_CONNECTED
            peer.expect("available")
            offer_all(pub, [message(i, s) for i, s in enumerate(SIZES)])
            done = peer.expect("done")
            assert done["messages"] == [[s, zlib.crc32(message(i, s))] for i, s in enumerate(SIZES)]
            pub.close()
            assert peer.expect("unavailable")["session"] == pub.session_id
    if loss:
        naks = [f for d, data in proxy.recorded if d == "to_client" for f in decode_datagram(data)
                if isinstance(f, Nak)]
        assert proxy.dropped > 0 and naks


def test_real_subscriber_that_stops_polling_back_pressures_native_offer(real_python: Path,
                                                                        driver: NativeDriver) -> None:
    sub_port = free_port()
    with RealPeer(real_python, role="sub", channel=f"aeron:udp?endpoint=127.0.0.1:{sub_port}", stream=STREAM,
                  pause_after=10) as peer:
        peer.expect("ready")
        pub = NativePublication(f"aeron:udp?endpoint=127.0.0.1:{sub_port}|term-length=64k", STREAM, driver)
        peer.expect("available")
        accepted = 0
        result = 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            result = pub.offer(message(accepted, 32))
            if result == OfferCode.BACK_PRESSURED and peer.log[-1]["event"] == "paused":
                break
            if result > 0:
                accepted += 1
            elif result == OfferCode.BACK_PRESSURED:
                peer.expect("paused")
        assert result == OfferCode.BACK_PRESSURED
        # nothing lost: the receiver window plus half a term of 64-byte frames, then no more
        assert accepted * 64 <= 64 * 1024 + 32 * 1024
        peer.send("resume")
        deadline = time.monotonic() + 20
        report: dict[str, object] = {"count": 0}
        while report["count"] != accepted and time.monotonic() < deadline:
            peer.send("report")
            report = peer.expect("report")
        assert report["messages"] == [[32, zlib.crc32(message(i, 32))] for i in range(accepted)]
        assert pub.offer(b"flowing again") > 0
        pub.close()


def test_native_mdc_publication_reaches_two_real_subscriptions_dynamic_and_manual(real_python: Path) -> None:
    count = 100
    with Aeron.connect() as aeron:
        for manual in (False, True):
            control, a, b = free_port(), free_port(), free_port()
            sub_control = "" if manual else f"|control=127.0.0.1:{control}"
            peers = [RealPeer(real_python, role="sub", channel=f"aeron:udp?endpoint=127.0.0.1:{p}{sub_control}",
                              stream=STREAM, count=count) for p in (a, b)]
            try:
                for peer in peers:
                    peer.expect("ready")
                mode = "|control-mode=manual" if manual else ""
                pub = aeron.add_publication(f"aeron:udp?control=127.0.0.1:{control}{mode}|transport=native", STREAM)
                if manual:
                    for p in (a, b):
                        pub.add_destination(f"aeron:udp?endpoint=127.0.0.1:{p}")
                for peer in peers:
                    peer.expect("available")
                offer_all(pub, [message(i, 40) for i in range(count)])
                for peer in peers:
                    assert peer.expect("done")["messages"] == [[40, zlib.crc32(message(i, 40))] for i in range(count)]
                pub.close()
                for peer in peers:
                    peer.expect("unavailable")
            finally:
                for peer in peers:
                    peer.close()


def test_real_dynamic_mdc_publication_reaches_two_aeron_compat_subscriptions(real_python: Path) -> None:
    control, a, b = free_port(), free_port(), free_port()
    sizes = [40] * 100 + [3000]
    with Aeron.connect() as aeron:
        subs = [aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{p}|control=127.0.0.1:{control}"
                                       "|transport=native", STREAM) for p in (a, b)]
        got: list[list[bytes]] = [[], []]
        assemblers = [FragmentAssembler(functools.partial(keep, mine)) for mine in got]
        with RealPeer(real_python, role="pub", channel=f"aeron:udp?control=127.0.0.1:{control}|control-mode=dynamic",
                      stream=STREAM, sizes=sizes) as peer:
            peer.expect("connected")
            for sub, assembler, mine in zip(subs, assemblers, got, strict=True):
                poll_until(sub, assembler, functools.partial(has_all, mine, len(sizes)))
    assert got[0] == got[1] == [message(i, s) for i, s in enumerate(sizes)]


def wait_for_rtt(probe: Callable[[], None], rtt: Callable[[], int | None], timeout: float = 10.0) -> int:
    """Probe every 20 ms until an RTTM echo has produced a measurement."""
    deadline = time.monotonic() + timeout
    while rtt() is None:
        assert time.monotonic() < deadline, "no RTTM echo"
        probe()
        time.sleep(0.02)
    value = rtt()
    assert value is not None
    return value


def test_rtt_measured_against_real_drivers_both_ways(real_python: Path, driver: NativeDriver) -> None:
    a, b = free_port(), free_port()
    with RealPeer(real_python, role="sub", channel=f"aeron:udp?endpoint=127.0.0.1:{a}", stream=STREAM) as peer:
        peer.expect("ready")
        pub = NativePublication(f"aeron:udp?endpoint=127.0.0.1:{a}", STREAM, driver)
        peer.expect("available")
        assert 0 < wait_for_rtt(pub.probe_rtt, lambda: pub.rtt_ns) < 1_000_000_000  # the real receiver echoed
        pub.close()
    sub = NativeSubscription(f"aeron:udp?endpoint=127.0.0.1:{b}", STREAM, driver)
    with RealPeer(real_python, role="pub", channel=f"aeron:udp?endpoint=127.0.0.1:{b}", stream=STREAM,
                  sizes=[8]) as peer:
        peer.expect("connected")
        poll_until(sub, lambda buf, h: None, lambda: bool(sub.images))
        image = sub.images[0]
        assert 0 < wait_for_rtt(sub.probe_rtt, lambda: image.rtt_ns) < 1_000_000_000  # the real sender echoed
    sub.close()


def test_heartbeats_keep_images_alive_and_silence_ends_them_both_ways(real_python: Path) -> None:
    liveness_s = 1.0
    a, b = free_port(), free_port()
    # a real subscription with a short image liveness: our idle publication's heartbeats keep it, silence ends it
    env = {"AERON_IMAGE_LIVENESS_TIMEOUT": str(int(liveness_s * 1e9))}
    with RealPeer(real_python, role="sub", channel=f"aeron:udp?endpoint=127.0.0.1:{a}", stream=STREAM,
                  env=env) as peer:
        peer.expect("ready")
        own = NativeDriver()
        try:
            NativePublication(f"aeron:udp?endpoint=127.0.0.1:{a}", STREAM, own)
            peer.expect("available")
            with pytest.raises(TimeoutError):
                peer.expect("unavailable", timeout=1.5 * liveness_s)  # idle, but heartbeats flow
        finally:
            own.close()  # the process "dies": no end of stream, just silence
        peer.expect("unavailable", timeout=10 * liveness_s)
    # our subscription with a short liveness: a real publication that is killed goes unavailable, without EOS
    with NativeDriver() as driver:
        sub = NativeSubscription(f"aeron:udp?endpoint=127.0.0.1:{b}", STREAM, driver,
                                 liveness_timeout_ns=int(liveness_s * 1e9))
        with RealPeer(real_python, role="pub", channel=f"aeron:udp?endpoint=127.0.0.1:{b}", stream=STREAM,
                      sizes=[]) as peer:
            peer.expect("sent")
            poll_until(sub, lambda buf, h: None, lambda: bool(sub.images))
            image = sub.images[0]
            deadline = time.monotonic() + 1.5 * liveness_s
            while time.monotonic() < deadline:  # idle real publication: its heartbeats keep our image
                sub.poll(lambda buf, h: None, 10)
                time.sleep(0.01)
            assert sub.images == [image]
            peer.proc.kill()
            poll_until(sub, lambda buf, h: None, lambda: not sub.images, timeout=10 * liveness_s)
            assert image.is_closed and not image.is_end_of_stream
        sub.close()


def test_aborted_claims_are_padding_a_real_subscription_skips(real_python: Path) -> None:
    port = free_port()
    with Aeron.connect() as aeron, RealPeer(real_python, role="sub", channel=f"aeron:udp?endpoint=127.0.0.1:{port}",
                                            stream=STREAM, count=2) as peer:
        peer.expect("ready")
        pub = aeron.add_publication(f"aeron:udp?endpoint=127.0.0.1:{port}|transport=native", STREAM)
        peer.expect("available")
        deadline = time.monotonic() + 10
        while not pub.is_connected:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        pub.try_claim(100).abort()
        with pub.try_claim(3) as claim:
            claim.put_bytes(b"abc")
        offer_all(pub, [b"xyz"])
        assert peer.expect("done")["messages"] == [[3, zlib.crc32(b"abc")], [3, zlib.crc32(b"xyz")]]
