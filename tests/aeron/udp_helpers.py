"""Helpers of the aeron:udp network tests (one driver per Aeron client, on loopback), whatever the transport:
free ports by name, spinning on a condition while the drivers' threads work, receiving."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from aeron_compat import FragmentAssembler, Subscription

_ports: dict[int, int] = {}


def port(name: int) -> int:
    """A free UDP port standing for `name` in this test (fixed numbers collide with concurrent runs)."""
    if name not in _ports:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.bind(("127.0.0.1", 0))
                candidate = sock.getsockname()[1]
            if candidate not in _ports.values():
                _ports[name] = candidate
                break
    return _ports[name]


def forget_ports() -> None:
    """A new test names its ports afresh."""
    _ports.clear()


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Spin on `condition` (the network runs on the drivers' loop threads)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.001)


def receive(sub, count: int) -> list[bytes]:  # type: ignore[no-untyped-def]
    """Poll `sub` until `count` fragments came; their bytes."""
    got: list[bytes] = []
    wait_until(lambda: sub.poll(lambda buf, hdr: got.append(bytes(buf)), 100) >= 0 and len(got) >= count)
    return got


def poll_whole(sub: Subscription, fragment_limit: int) -> list[bytes]:
    """Poll `sub` through a FragmentAssembler until a whole message came; the messages assembled."""
    whole: list[bytes] = []
    assembler = FragmentAssembler(lambda buf, hdr: whole.append(bytes(buf)))
    wait_until(lambda: sub.poll(assembler, fragment_limit) >= 0 and bool(whole))
    return whole


def offer(pub, data: bytes) -> None:  # type: ignore[no-untyped-def]
    """Offer until the publication takes `data`."""
    wait_until(lambda: pub.offer(data) > 0)
