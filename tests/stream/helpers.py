"""Shared set-ups for the Stream simulation tests."""

from __future__ import annotations

import random

from aeron_compat.marlin.connection import Connection, Readable, StreamOpened
from aeron_compat.marlin.endpoint import Endpoint
from aeron_compat.marlin.limits import StreamConfig
from tests.stream.simnet import A, B, SimNet


class Pair:
    """A dialer at A and a listener at B on one SimNet, with the listener's received bytes per stream."""

    def __init__(self, net: SimNet, config: StreamConfig | None = None) -> None:
        self.net = net
        self.a = net.add(A, Endpoint(config, rng=random.Random(net.seed * 2 + 1)))
        self.b = net.add(B, Endpoint(config, listening=True, rng=random.Random(net.seed * 2 + 2)))
        self.client = self.a.dial(B, net.now)
        self.server: Connection | None = None
        self.got: dict[int, bytearray] = {}
        self.got_a: dict[int, bytearray] = {}
        self.opened: list[int] = []
        self.opened_a: list[int] = []

    def pump(self) -> None:
        for conn, ev in self.b.events():
            if self.server is None and conn.incoming:
                self.server = conn
            if isinstance(ev, StreamOpened):
                self.opened.append(ev.stream_id)
            if isinstance(ev, Readable):
                self.got.setdefault(ev.stream_id, bytearray()).extend(conn.read(ev.stream_id))
        for conn, ev in self.a.events():
            if isinstance(ev, StreamOpened):
                self.opened_a.append(ev.stream_id)
            if isinstance(ev, Readable):
                self.got_a.setdefault(ev.stream_id, bytearray()).extend(conn.read(ev.stream_id))

    def established(self) -> bool:
        self.pump()
        return self.server is not None and self.client.state.name == "ESTABLISHED"

    def finished(self, sid: int) -> bool:
        self.pump()
        return self.server is not None and self.server.at_eof(sid)


def payload(n: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(n)
