"""The sans-I/O Stream endpoint: one UDP socket's worth of connections, demultiplexed by connection id.

Theory: every datagram goes to `receive(data, addr, now)`. It is decoded (bad
bytes are counted and dropped, never raised), then routed: a packet with a
destination id goes to the connection holding that local id if its source id
and address match the peer's; a DIAL (destination 0) goes to a connection
already dialing that address (simultaneous open) or with that peer id
(a retransmitted DIAL), else, when listening, to a new half-open connection.
Half-open connections (DIAL received, not confirmed) cost a DIAL of ten
bytes each, so a flood must not lock out a good dial: the seed has no
stateless cookie (decision MARLIN-31), so a new DIAL from a source address
holding `max_half_open_per_source` slots evicts that source's oldest, and one
arriving with all `max_half_open` (or `max_connections`) taken evicts the
oldest slot of the source holding the most: a flood from a few addresses
churns only its own slots, and a good dial from elsewhere is evicted only by
a flood from more distinct addresses than the table holds arriving within
its round trip. Evicted slots are forgotten silently (no RST, no event: the
application never saw them). Anything else for an unknown
connection is answered with RST (never a RST for a RST). Connection ids come
from the injected `random.Random`, so simulations are deterministic.
`transmit(now)` collects every connection's datagrams; `next_timer(now)` is
the earliest moment something is due.
"""

from __future__ import annotations

import random

from aeron_compat.marlin.connection import Address, Closed, Connection, Event, State
from aeron_compat.marlin.errors import StreamLimitExceeded, StreamWireError
from aeron_compat.marlin.limits import StreamConfig
from aeron_compat.marlin.openweaver import OpenWeaverKeys
from aeron_compat.marlin.packets import Dial, Packet, Profile, Rst, decode, encode


class Endpoint:
    """All connections of one local socket."""

    def __init__(self, config: StreamConfig | None = None, *, profile: Profile = "seed", listening: bool = False,
                 rng: random.Random | None = None, keys: OpenWeaverKeys | None = None) -> None:
        if profile == "openweaver" and keys is None:
            keys = OpenWeaverKeys()
        self.keys = keys
        self.config = config or StreamConfig()
        self.profile: Profile = profile
        self.listening = listening
        self.rng = rng or random.Random()
        self.connections: dict[int, Connection] = {}
        self.counters = {"malformed": 0, "rst_sent": 0, "refused": 0, "stray": 0, "evicted": 0}
        self._out: list[tuple[bytes, Address]] = []
        self._half_open: dict[int, str] = {}  # local id -> source host of a DIAL we answered, oldest first
        self._by_source: dict[str, dict[int, None]] = {}  # source host -> its half-open ids, oldest first

    def _new_id(self) -> int:
        while True:
            cid = self.rng.randrange(1, 1 << 32)
            if cid not in self.connections:
                return cid

    def _room(self) -> None:
        if len(self.connections) >= self.config.max_connections:
            raise StreamLimitExceeded(f"more than {self.config.max_connections} connections")

    def dial(self, addr: Address, now_ns: int, remote_key: bytes | None = None) -> Connection:
        """Start a connection to `addr` (its DIAL goes out on the next `transmit`).

        Profile "openweaver" needs the listener's static public key, `remote_key`.
        """
        self._room()
        payload = b""
        if self.profile == "openweaver":
            if remote_key is None or self.keys is None:
                raise ValueError("an openweaver dial needs the listener's static public key")
            payload = self.keys.dial_payload(remote_key)
        conn = Connection(self.config, self.profile, self._new_id(), addr, now_ns, dialer=True, dial_payload=payload)
        self.connections[conn.local_id] = conn
        return conn

    def receive(self, data: bytes, addr: Address, now_ns: int) -> Connection | None:
        """Handle one datagram from `addr`; returns the connection it went to, if any."""
        try:
            packet = decode(data, self.profile, self.config.max_payload)
        except StreamWireError:
            self.counters["malformed"] += 1
            return None
        conn = self._route(packet, addr, now_ns)
        if conn is not None:
            conn.on_packet(packet, now_ns)  # a listener's connection reports Established once (conn.incoming)
            self._settle(conn)
        return conn

    def _route(self, packet: Packet, addr: Address, now_ns: int) -> Connection | None:
        if isinstance(packet, Dial):
            answer = b""
            if self.keys is not None:
                maybe = self.keys.answer_dial(packet.payload)
                if maybe is None:
                    self.counters["refused"] += 1
                    return None
                answer = maybe
            for c in self.connections.values():
                if c.peer == addr and c.state is not State.CLOSED and (
                        c.peer_id == packet.src_conn_id or (c.state is State.DIAL_SENT and not c.peer_id)):
                    if not c.dialconf_payload:
                        c.dialconf_payload = answer
                    return c
            if not self.listening:
                self._rst(packet, addr)
                return None
            if not self._make_room(addr[0]):
                self.counters["refused"] += 1
                return None
            new = Connection(self.config, self.profile, self._new_id(), addr, now_ns, dialer=False,
                             peer_id=packet.src_conn_id, dialconf_payload=answer)
            self.connections[new.local_id] = new
            self._half_open[new.local_id] = addr[0]
            self._by_source.setdefault(addr[0], {})[new.local_id] = None
            return None  # the new connection already queued its DIALCONF
        conn = self.connections.get(packet.dst_conn_id)
        if conn is None or conn.peer != addr or conn.state is State.CLOSED or (
                conn.peer_id and conn.peer_id != packet.src_conn_id):
            if not isinstance(packet, Rst):
                self._rst(packet, addr)
            else:
                self.counters["stray"] += 1
            return None
        return conn

    def _make_room(self, host: str) -> bool:
        """Room for one more half-open connection from `host`, evicting as the module docstring says."""
        mine = self._by_source.get(host)
        if mine is not None and len(mine) >= self.config.max_half_open_per_source:
            self._evict(next(iter(mine)))
        elif len(self._half_open) >= self.config.max_half_open or (
                len(self.connections) >= self.config.max_connections and self._half_open):
            fullest = max(self._by_source.values(), key=lambda ids: len(ids))
            self._evict(next(iter(fullest)))
        return len(self.connections) < self.config.max_connections and (
            len(self._half_open) < self.config.max_half_open)

    def _evict(self, cid: int) -> None:
        self.counters["evicted"] += 1
        self._forget_half_open(cid)
        del self.connections[cid]

    def _forget_half_open(self, cid: int) -> None:
        host = self._half_open.pop(cid, None)
        if host is not None:
            mine = self._by_source[host]
            del mine[cid]
            if not mine:
                del self._by_source[host]

    def _settle(self, conn: Connection) -> None:
        """A half-open connection that got confirmed or ended no longer holds a half-open slot."""
        if conn.state is not State.DIAL_RECV and conn.local_id in self._half_open:
            self._forget_half_open(conn.local_id)

    def _rst(self, packet: Packet, addr: Address) -> None:
        self.counters["rst_sent"] += 1
        self._out.append((encode(Rst(packet.dst_conn_id, packet.src_conn_id), self.profile), addr))

    def transmit(self, now_ns: int) -> list[tuple[bytes, Address]]:
        """Every datagram due now, with its destination."""
        out, self._out = self._out, []
        for conn in self.connections.values():
            out.extend((d, conn.peer) for d in conn.poll(now_ns))
        return out

    def on_timer(self, now_ns: int) -> None:
        """Run every connection's due timers."""
        for conn in self.connections.values():
            t = conn.next_timer()
            if t is not None and t <= now_ns:
                conn.on_timer(now_ns)
                self._settle(conn)

    def next_timer(self, now_ns: int) -> int | None:
        """The earliest time a timer or a paced send is due."""
        times = []
        for conn in self.connections.values():
            for t in (conn.next_timer(), conn.next_send_ns(now_ns)):
                if t is not None:
                    times.append(t)
        return min(times) if times else None

    def events(self) -> list[tuple[Connection, Event]]:
        """Drain every connection's events; closed connections are forgotten once drained."""
        out: list[tuple[Connection, Event]] = []
        for cid in list(self.connections):
            conn = self.connections[cid]
            while conn.events:
                out.append((conn, conn.events.popleft()))
            if conn.state is State.CLOSED:
                for d in conn.poll(0):
                    self._out.append((d, conn.peer))
                self._forget_half_open(cid)
                del self.connections[cid]
        return out

    def state_sizes(self) -> dict[str, int]:
        """Endpoint-wide counts of every bounded structure."""
        sizes = {"connections": len(self.connections),
                 "half_open": sum(1 for c in self.connections.values() if c.state is State.DIAL_RECV)}
        for conn in self.connections.values():
            for k, v in conn.state_sizes().items():
                sizes[k] = sizes.get(k, 0) + v
        return sizes


__all__ = ["Closed", "Endpoint"]
