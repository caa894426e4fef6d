"""One Stream connection as a sans-I/O state machine: packets and time in, datagrams and events out.

Theory: the handshake states live in `State` and change only in `_on_handshake`
(DIAL_SENT -> ESTABLISHED on DIALCONF; DIAL_RECV -> ESTABLISHED on DIALCONF
(simultaneous open) or CONF or the peer's first DATA; DIAL/DIALCONF resent on
a doubling timer until `handshake_tries` run out). Once established, the
sender cuts queued stream bytes into DATA packets, each with a fresh packet
number; it sends lost data first, then new data, within the congestion window
and the pacing bucket. ACKs remove packets from `sent`; any packet sent at
least `loss_delay_ns` before the largest acked one is lost (its bytes go to
`lost` and the window halves once per round). The tail-loss timer, re-armed
by every ACK, declares everything in flight lost when no ACK comes. The
receiver records packet numbers for ACKs (sent at once on a gap or after
`ack_every` packets, else after `ack_delay_ns`) and reassembles each stream
by offset. `poll(now)` returns the datagrams to send now; `next_timer()` says
when to call `on_timer` (and `poll`) again.
"""

from __future__ import annotations

import bisect
import enum
import heapq
from collections import deque
from dataclasses import dataclass, field

from aeron_compat.stream.congestion import Congestion
from aeron_compat.stream.errors import (
    StreamError,
    StreamLimitExceeded,
    StreamProtocolError,
    StreamReset,
    StreamTimeout,
)
from aeron_compat.stream.limits import StreamConfig
from aeron_compat.stream.packets import Ack, Conf, Data, Dial, DialConf, Packet, Profile, Rst, encode
from aeron_compat.stream.recv import ReceivedPackets, RecvStream

Address = tuple[str, int]
PROBE_MIN_NS = 2_000_000  # a window probe waits at least this (and 2 srtt) after the packet's last send
MAX_ACK_ENTRIES = 129  # the 65 newest ranges (one ACK per received batch: a lost ACK leaves none unacked)


class State(enum.Enum):
    """Handshake state (the seed's names)."""

    DIAL_SENT = "DIAL_SENT"
    DIAL_RECV = "DIAL_RECV"
    ESTABLISHED = "ESTABLISHED"
    CLOSED = "CLOSED"


@dataclass(frozen=True, slots=True)
class Established:
    """The handshake completed."""


@dataclass(frozen=True, slots=True)
class StreamOpened:
    """The peer sent the first bytes of a stream this side had not opened."""

    stream_id: int


@dataclass(frozen=True, slots=True)
class Readable:
    """In-order bytes (or the FIN) became readable on a stream."""

    stream_id: int


@dataclass(frozen=True, slots=True)
class Writable:
    """Queued bytes were sent, so the send buffer has room again."""


@dataclass(frozen=True, slots=True)
class Closed:
    """The connection ended; `error` is None for a local close."""

    error: StreamError | None


Event = Established | StreamOpened | Readable | Writable | Closed


@dataclass(slots=True)
class SentPacket:
    """What a packet number carried, kept until acked or lost."""

    stream_id: int
    offset: int
    data: bytes
    fin: bool
    sent_ns: int


@dataclass
class SendStream:
    """One stream's outgoing bytes not yet packetised."""

    queued: bytearray = field(default_factory=bytearray)
    next_offset: int = 0
    fin_queued: bool = False
    fin_sent: bool = False
    unacked: list[int] = field(default_factory=list)  # heap of the offsets of packets sent and not yet acked
    acked: set[int] = field(default_factory=set)  # offsets acked but still in `unacked` (removed lazily)

    def floor(self) -> int:
        """The lowest offset not yet acked: the peer's reader cannot have moved past it."""
        heap, acked = self.unacked, self.acked
        while heap and heap[0] in acked:
            acked.discard(heapq.heappop(heap))
        return heap[0] if heap else self.next_offset


class Connection:
    """A connection with one peer; created by `Endpoint`, owned by it."""

    def __init__(self, config: StreamConfig, profile: Profile, local_id: int, peer: Address, now_ns: int,
                 *, dialer: bool, peer_id: int = 0, dial_payload: bytes = b"",
                 dialconf_payload: bytes = b"") -> None:
        self.config = config
        self.profile: Profile = profile
        self.local_id = local_id
        self.peer_id = peer_id
        self.peer = peer
        self.dial_payload = dial_payload  # what our DIALs carry (openweaver: sealed keys)
        self.dialconf_payload = dialconf_payload  # what our DIALCONFs carry
        self.state = State.DIAL_SENT if dialer else State.DIAL_RECV
        self.incoming = not dialer
        self.events: deque[Event] = deque()
        self.error: StreamError | None = None
        self._out: list[bytes] = []
        self._hs_tries = 1
        self._hs_deadline = now_ns + config.handshake_retry_ns
        self._last_recv_ns = now_ns
        self.send_streams: dict[int, SendStream] = {}
        self.recv_streams: dict[int, RecvStream] = {}
        self._send_order: deque[int] = deque()  # streams with queued bytes, round robin
        self.queued_bytes = 0
        self.next_pn = 0
        self.sent: dict[int, SentPacket] = {}
        self.in_flight = 0  # bytes of every unacked packet
        self.hole_bytes = 0  # of those, bytes of packets below the largest acked (off the wire: see _pipe)
        # lost data awaiting resend, a heap by (offset, stream): the lowest offsets first, so the hole the
        # receiver's reader waits on is filled before data its window may still refuse
        self.lost: list[tuple[int, int, bytes, bool]] = []
        self.largest_acked = -1
        self._scanned_pn = -1  # packets up to here were checked for the reordering threshold
        # packets overtaken by `reorder_threshold` later ones: data resent, the packet not yet declared
        # lost (the 50 ms rule or the tail-loss timer does that); pn -> send time, ascending
        self.overtaken: dict[int, int] = {}
        self._tlp_deadline: int | None = None
        self.cc = Congestion(mss=config.max_payload, cwnd=config.initial_cwnd_packets * config.max_payload,
                             min_cwnd=config.min_cwnd_packets * config.max_payload,
                             burst=config.pacing_burst_packets, srtt_ns=config.initial_rtt_ns,
                             max_cwnd=config.max_cwnd, growth=config.avoidance_growth_packets,
                             max_queue_delay_ns=config.max_queue_delay_ns)
        self.cc.last_refill_ns = now_ns
        self.received = ReceivedPackets(config.max_ack_ranges)
        self._ack_pending = 0
        self._ack_now = False  # an ACK is due at the next poll
        self._ack_deadline: int | None = None
        self._ack_repeat_at: int | None = None  # the last ACK goes again then, unless another went since
        self._next_local_stream = 0
        self.stats = {"sent_packets": 0, "retransmitted": 0, "lost": 0, "tlp": 0, "dup_packets": 0, "probes": 0,
                      "early_resent": 0}
        if dialer:
            self._emit(Dial(local_id, 0, dial_payload))
        else:
            self._emit(DialConf(local_id, peer_id, dialconf_payload))

    # ------------------------------------------------------------------ application side
    def open_stream(self) -> int:
        """A new stream id of this side's parity (the smaller connection id uses even ids)."""
        if len(self.send_streams.keys() | self.recv_streams.keys()) >= self.config.max_streams:
            raise StreamLimitExceeded(f"more than {self.config.max_streams} streams")
        parity = 0 if self.local_id < self.peer_id else 1
        while True:
            sid = self._next_local_stream * 2 + parity
            self._next_local_stream += 1
            if sid > 0xFFFF:
                raise StreamLimitExceeded("stream ids exhausted")
            if sid not in self.send_streams and sid not in self.recv_streams:
                self.send_streams[sid] = SendStream()
                return sid

    def send(self, stream_id: int, data: bytes, fin: bool = False) -> None:
        """Queue `data` (and the FIN) on a stream; raises if the send buffer would overflow."""
        self._check_open()
        if not 0 <= stream_id <= 0xFFFF:
            raise ValueError("stream id out of range")
        if self.queued_bytes + len(data) > self.config.send_buffer:
            raise StreamLimitExceeded(f"send buffer of {self.config.send_buffer} bytes full")
        s = self.send_streams.get(stream_id)
        if s is None:
            if len(self.send_streams.keys() | self.recv_streams.keys()) >= self.config.max_streams:
                raise StreamLimitExceeded(f"more than {self.config.max_streams} streams")
            s = self.send_streams[stream_id] = SendStream()
        if s.fin_queued:
            raise StreamError(f"stream {stream_id} already finished")
        if not data and not fin:
            return
        s.queued += data
        self.queued_bytes += len(data)
        s.fin_queued = fin
        if stream_id not in self._send_order:
            self._send_order.append(stream_id)

    def send_room(self) -> int:
        """Bytes `send` accepts now."""
        return self.config.send_buffer - self.queued_bytes

    def read(self, stream_id: int, limit: int = -1) -> bytes:
        """In-order bytes received on a stream (b"" when none yet or at the end)."""
        s = self.recv_streams.get(stream_id)
        return s.read(limit) if s is not None else b""

    def at_eof(self, stream_id: int) -> bool:
        """The peer's FIN arrived and all bytes before it were read."""
        s = self.recv_streams.get(stream_id)
        return s is not None and s.finished

    def close(self) -> None:
        """Reset the connection now (the seed has no graceful close beyond each stream's FIN)."""
        if self.state is not State.CLOSED:
            if self.peer_id:
                self._emit(Rst(self.local_id, self.peer_id))
            self._finish(None)

    def all_sent(self) -> bool:
        """Nothing queued, nothing lost awaiting resend, nothing unacked."""
        return not self.queued_bytes and not self.lost and not self.sent

    def state_sizes(self) -> dict[str, int]:
        """Every bounded per-connection structure's current size."""
        return {
            "streams": len(self.send_streams.keys() | self.recv_streams.keys()),
            "send_queued_bytes": self.queued_bytes,
            "sent_unacked": len(self.sent),
            "lost_pending": len(self.lost),
            "overtaken": len(self.overtaken),
            "ack_ranges": len(self.received),
            "recv_buffered_bytes": sum(s.buffered + len(s.readable) for s in self.recv_streams.values()),
            "recv_chunks": sum(len(s.chunks) for s in self.recv_streams.values()),
        }

    # ------------------------------------------------------------------ network side
    def on_packet(self, packet: Packet, now_ns: int) -> None:
        """Handle one packet routed to this connection."""
        if self.state is State.CLOSED:
            return
        self._last_recv_ns = now_ns
        try:
            if isinstance(packet, Rst):
                self._finish(StreamReset("the peer reset the connection"))
            elif isinstance(packet, Dial | DialConf | Conf):
                self._on_handshake(packet, now_ns)
            elif isinstance(packet, Data):
                if self.state is State.DIAL_RECV and self.peer_id and packet.src_conn_id == self.peer_id:
                    self._established()  # the CONF was lost; data proves the peer is established
                if self.state is State.ESTABLISHED:
                    self._on_data(packet, now_ns)
            elif isinstance(packet, Ack) and self.state is State.ESTABLISHED:
                self._on_ack(packet, now_ns)
        except StreamProtocolError as e:
            self._emit(Rst(self.local_id, self.peer_id))
            self._finish(e)

    def _on_handshake(self, packet: Dial | DialConf | Conf, now_ns: int) -> None:
        st = self.state
        if isinstance(packet, Dial):
            if st is State.DIAL_SENT:  # simultaneous open
                self.peer_id = packet.src_conn_id
                self.state = State.DIAL_RECV
                self._hs_tries = 1
                self._hs_deadline = now_ns + self.config.handshake_retry_ns
            if packet.src_conn_id == self.peer_id and self.state is not State.ESTABLISHED:
                self._emit(DialConf(self.local_id, self.peer_id, self.dialconf_payload))
            elif packet.src_conn_id == self.peer_id:
                self._emit(Conf(self.local_id, self.peer_id))  # our DIALCONF's answer was lost; confirm again
        elif isinstance(packet, DialConf):
            if st is State.DIAL_SENT or (st is State.DIAL_RECV and packet.src_conn_id == self.peer_id):
                self.peer_id = packet.src_conn_id
                self._established()
            if self.state is State.ESTABLISHED and packet.src_conn_id == self.peer_id:
                self._emit(Conf(self.local_id, self.peer_id))
        elif st is State.DIAL_RECV and packet.src_conn_id == self.peer_id:
            self._established()

    def _established(self) -> None:
        self.state = State.ESTABLISHED
        self.events.append(Established())

    def _on_data(self, p: Data, now_ns: int) -> None:
        s = self.recv_streams.get(p.stream_id)
        if s is None:
            if len(self.send_streams.keys() | self.recv_streams.keys()) >= self.config.max_streams \
                    and p.stream_id not in self.send_streams:
                return  # refused: not acked, so the peer retries once streams have closed
            s = self.recv_streams[p.stream_id] = RecvStream(self.config.recv_window, self.config.max_recv_chunks)
            if p.stream_id not in self.send_streams:
                self.events.append(StreamOpened(p.stream_id))
        before = (len(s.readable), s.fin_offset)
        if not s.accept(p.offset, p.data, p.fin):
            return
        if (len(s.readable), s.fin_offset) != before or (p.fin and s.finished):
            self.events.append(Readable(p.stream_id))
        in_order = p.packet_number == self.received.largest + 1 and len(self.received) <= 1
        if not self.received.add(p.packet_number):
            self.stats["dup_packets"] += 1
            in_order = False
        self._ack_pending += 1
        if not in_order or self._ack_pending >= self.config.ack_every:
            self._ack_now = True  # sent by the next poll: one ACK per batch of received datagrams
        elif self._ack_deadline is None:
            self._ack_deadline = now_ns + self.config.ack_delay_ns

    def _send_ack(self, now_ns: int, repeat: bool = False) -> None:
        """ACK everything received; a first ACK arms one repeat `ack_repeat_ns` later.

        The repeat answers a lost ACK: the sender sends nothing new until some ACK frees its window,
        so without it a lost last ACK of a flight stalls the connection until the tail-loss timer,
        which resends everything in flight and halves the window.
        """
        largest, entries = self.received.ack_entries(MAX_ACK_ENTRIES)
        self._emit(Ack(self.local_id, self.peer_id, largest, entries))
        self._ack_pending = 0
        self._ack_deadline = None
        self._ack_now = False
        self._ack_repeat_at = None if repeat or not self.config.ack_repeat_ns else now_ns + self.config.ack_repeat_ns

    def _on_ack(self, ack: Ack, now_ns: int) -> None:
        newest: SentPacket | None = None
        sent = self.sent
        oldest = min(next(iter(sent), ack.largest), next(iter(self.overtaken), ack.largest))
        acked = ack.acked(oldest)  # what is below the oldest unacked packet is settled already
        if self.overtaken and acked and acked[-1][0] <= next(reversed(self.overtaken)):
            self._settle_overtaken(acked)
        if sent:
            smallest = next(iter(sent))  # packet numbers enter `sent` in ascending order
            for low, high in acked:
                if high < smallest:
                    break  # ranges come highest first: the rest is already settled
                low = max(low, smallest)
                if high - low > len(sent):
                    pns = [pn for pn in sent if low <= pn <= high]
                else:
                    pns = [pn for pn in range(low, high + 1) if pn in sent]
                for pn in pns:
                    sp = sent.pop(pn)
                    ss = self.send_streams.get(sp.stream_id)
                    if ss is not None:
                        ss.acked.add(sp.offset)
                    size = len(sp.data) or 1
                    self.in_flight -= size
                    if pn < self.largest_acked:
                        self.hole_bytes -= size  # a hole filled late (reordering)
                    self.cc.on_acked(len(sp.data), sp.sent_ns)
                    if pn == ack.largest:
                        newest = sp
        if newest is not None and ack.largest > self.largest_acked:
            for pn in range(self.largest_acked + 1, ack.largest):  # packets this ACK skipped become holes
                hole = sent.get(pn)
                if hole is not None:
                    self.hole_bytes += len(hole.data) or 1
            self.largest_acked = ack.largest
            self.cc.on_rtt(now_ns - newest.sent_ns)
            self._resend_overtaken(now_ns)
            cutoff = newest.sent_ns - self.config.loss_delay_ns
            lost = []
            for pn, sp in sent.items():  # ascending packet numbers, so ascending send times: stop early
                if sp.sent_ns > cutoff or pn >= ack.largest:
                    break
                lost.append(pn)
            for pn in lost:
                self._mark_lost(pn, now_ns)
            self._expire_overtaken(cutoff, now_ns)
        self._tlp_deadline = now_ns + self._tlp_ns() if self.sent else None

    def _resend_overtaken(self, now_ns: int) -> None:
        """Send again, now, the data of every unacked packet `reorder_threshold` or more below the largest acked.

        The seed declares a packet lost (and the window halves) only 50 ms after a later one was
        acked; on a fast path that leaves the receiver's reader waiting on the hole for fifty round
        trips, and a lost resend doubles it, so the peer's window fills and the sender stalls. The
        overtaken packet's data is queued for resending at once (lost data's priority) but the
        packet itself is not declared lost: it stays unacked, and the 50 ms rule declares it, with
        the seed's congestion event, unless it is acked first (then it was only reordered).
        """
        sent = self.sent
        top = self.largest_acked - self.config.reorder_threshold
        for pn in range(max(self._scanned_pn + 1, next(iter(sent), top + 1)), top + 1):
            sp = sent.get(pn)
            if sp is not None:
                self._forget(pn)
                self.overtaken[pn] = sp.sent_ns
                self.stats["early_resent"] += 1
                heapq.heappush(self.lost, (sp.offset, sp.stream_id, sp.data, sp.fin))
        self._scanned_pn = max(self._scanned_pn, top)
        cap = max(1, self.config.max_cwnd // self.config.max_payload)
        while len(self.overtaken) > cap:  # a window's worth at most: the oldest are lost now
            self.stats["lost"] += 1
            oldest = next(iter(self.overtaken))
            self.cc.on_congestion(self.overtaken.pop(oldest), now_ns)

    def _expire_overtaken(self, cutoff_ns: int, now_ns: int) -> None:
        """The 50 ms rule for overtaken packets: lost, a congestion event (their data went already)."""
        overtaken = self.overtaken
        expired = []
        for pn, sent_ns in overtaken.items():
            if sent_ns > cutoff_ns:
                break
            expired.append(pn)
        for pn in expired:
            self.stats["lost"] += 1
            self.cc.on_congestion(overtaken.pop(pn), now_ns)

    def _settle_overtaken(self, acked: list[tuple[int, int]]) -> None:
        """An overtaken packet acked after all was only reordered: no loss, no congestion event."""
        lows = [low for low, _ in reversed(acked)]  # ascending
        late = []
        for pn in self.overtaken:
            i = bisect.bisect_right(lows, pn) - 1
            if i >= 0 and pn <= acked[len(acked) - 1 - i][1]:
                late.append(pn)
        for pn in late:
            del self.overtaken[pn]

    def _mark_lost(self, pn: int, now_ns: int) -> None:
        sp = self.sent[pn]
        self._forget(pn)
        self.stats["lost"] += 1
        self.cc.on_congestion(sp.sent_ns, now_ns)
        heapq.heappush(self.lost, (sp.offset, sp.stream_id, sp.data, sp.fin))

    def _pipe(self) -> int:
        """Bytes in flight for the congestion window: unacked packets not below the largest acked.

        A packet sent before one the peer acked has left the wire (dropped, or overtaken); it stays
        unacked until acked late or declared lost by the 50 ms rule, but it no longer holds the
        window, so new data keeps flowing (and keeps producing the later ACKs the rule needs).
        """
        return self.in_flight - self.hole_bytes

    def _tlp_ns(self) -> int:
        return max(self.config.min_tlp_ns, 3 * self.cc.srtt_ns + self.config.ack_delay_ns)

    def next_timer(self) -> int | None:
        """The earliest time `on_timer` has work (None: only new packets or sends matter)."""
        if self.state is State.CLOSED:
            return None
        times = [self._last_recv_ns + self.config.idle_timeout_ns]
        if self.state is not State.ESTABLISHED:
            times.append(self._hs_deadline)
        if self._ack_deadline is not None:
            times.append(self._ack_deadline)
        if self._ack_repeat_at is not None:
            times.append(self._ack_repeat_at)
        if self._ack_now:
            times.append(self._last_recv_ns)
        if self._tlp_deadline is not None:
            times.append(self._tlp_deadline)
        return min(times)

    def next_send_ns(self, now_ns: int) -> int | None:
        """When `poll` can next send data (None: nothing to send or the window is full)."""
        if self.state is not State.ESTABLISHED or not (self.lost or self._send_order):
            return None
        room = (self.cc.cwnd - self._pipe()) // self.config.max_payload
        if room < 1:
            return None
        if not self.lost and not self._rotate_to_open_stream(self.config.recv_window):
            probe = self._window_probe()  # every stream waits for the peer's window
            if probe is None:
                return None
            return max(self._probe_due(probe[1]), self.cc.next_send_ns(now_ns))
        return self.cc.next_send_ns(now_ns, room)

    def on_timer(self, now_ns: int) -> None:
        """Run whatever timers are due at `now_ns`."""
        if self.state is State.CLOSED:
            return
        if now_ns >= self._last_recv_ns + self.config.idle_timeout_ns:
            self._finish(StreamTimeout("no packet from the peer within the idle timeout"))
            return
        if self.state is not State.ESTABLISHED and now_ns >= self._hs_deadline:
            if self._hs_tries >= self.config.handshake_tries:
                self._finish(StreamReset("the handshake was not answered"))
                return
            self._hs_tries += 1
            self._hs_deadline = now_ns + (self.config.handshake_retry_ns << (self._hs_tries - 1))
            if self.state is State.DIAL_SENT:
                self._emit(Dial(self.local_id, 0, self.dial_payload))
            else:
                self._emit(DialConf(self.local_id, self.peer_id, self.dialconf_payload))
        if self._ack_deadline is not None and now_ns >= self._ack_deadline:
            self._send_ack(now_ns)
        elif self._ack_repeat_at is not None and now_ns >= self._ack_repeat_at:
            self._send_ack(now_ns, repeat=True)
        if self._tlp_deadline is not None and now_ns >= self._tlp_deadline:
            self._tlp_deadline = None
            if self.sent:
                self.stats["tlp"] += 1
                for pn in sorted(self.sent):
                    self._mark_lost(pn, now_ns)
                self._expire_overtaken(now_ns, now_ns)  # in flight too: lost (their data went already)

    def poll(self, now_ns: int) -> list[bytes]:
        """Datagrams to send now: control packets, then lost data, then new data, paced."""
        if self.state is State.ESTABLISHED:
            if self._ack_now:
                self._send_ack(now_ns)
            self._fill(now_ns)
        out, self._out = self._out, []
        return out

    def _rotate_to_open_stream(self, window: int) -> bool:
        """Rotate `_send_order` until its first stream has window left; False if none has."""
        mss = self.config.max_payload
        for _ in range(len(self._send_order)):
            s = self.send_streams[self._send_order[0]]
            if s.next_offset + mss <= s.floor() + window:
                return True
            self._send_order.rotate(-1)
        return False

    def _fill(self, now_ns: int) -> None:
        mss = self.config.max_payload
        window = self.config.recv_window
        sent_any = False
        while (self.lost or self._send_order) and self._pipe() + mss <= self.cc.cwnd and self.cc.may_send(now_ns):
            if self.lost:
                offset, sid, data, fin = heapq.heappop(self.lost)
                self.stats["retransmitted"] += 1
            else:
                sid = self._send_order[0]
                s = self.send_streams[sid]
                if s.next_offset + mss > s.floor() + window and not self._rotate_to_open_stream(window):
                    # the peer's window (assumed the size of ours) would refuse new data: probe its floor
                    probe = self._window_probe()
                    if probe is None or now_ns < self._probe_due(probe[1]):
                        break
                    old, sp = probe
                    self._forget(old)
                    sid, offset, data, fin = sp.stream_id, sp.offset, sp.data, sp.fin
                    self.stats["probes"] += 1
                    self._send_packet(sid, offset, data, fin, now_ns)
                    continue
                sid = self._send_order[0]
                s = self.send_streams[sid]
                heapq.heappush(s.unacked, s.next_offset)
                data = bytes(s.queued[:mss])
                del s.queued[:mss]
                offset = s.next_offset
                s.next_offset += len(data)
                self.queued_bytes -= len(data)
                fin = s.fin_queued and not s.queued
                s.fin_sent = fin
                self._send_order.popleft()
                if s.queued:
                    self._send_order.append(sid)
                sent_any = True
            self._send_packet(sid, offset, data, fin, now_ns)
        if sent_any:
            self.events.append(Writable())

    def _send_packet(self, sid: int, offset: int, data: bytes, fin: bool, now_ns: int) -> None:
        pn = self.next_pn
        self.next_pn += 1
        self.sent[pn] = SentPacket(sid, offset, data, fin, now_ns)
        self.in_flight += len(data) or 1
        self.cc.on_sent(len(data))
        self.stats["sent_packets"] += 1
        self._emit(Data(self.local_id, self.peer_id, sid, pn, offset, data, fin))
        if self._tlp_deadline is None:
            self._tlp_deadline = now_ns + self._tlp_ns()

    def _window_probe(self) -> tuple[int, SentPacket] | None:
        """The unacked packet at the window floor of the first blocked stream (None: it is not in `sent`).

        When every stream is blocked by the peer's window, nothing new is sent, so no later packet can
        be acked and the 50 ms rule can never declare the floor's packet lost: only the tail-loss timer
        would. Instead that one packet is sent again (a window probe) `_probe_due` after its last send,
        without declaring a loss (no congestion event): the peer's window, not the path, is the limit.
        """
        sid = self._send_order[0]
        floor = self.send_streams[sid].floor()
        for pn, sp in self.sent.items():
            if sp.stream_id == sid and sp.offset == floor:
                return pn, sp
        return None

    def _probe_due(self, sp: SentPacket) -> int:
        return sp.sent_ns + max(2 * self.cc.srtt_ns, PROBE_MIN_NS)

    def _forget(self, pn: int) -> None:
        """Drop an unacked packet from `sent` (it is being sent again under a new number)."""
        sp = self.sent.pop(pn)
        size = len(sp.data) or 1
        self.in_flight -= size
        if pn < self.largest_acked:
            self.hole_bytes -= size

    # ------------------------------------------------------------------ internals
    def _emit(self, packet: Packet) -> None:
        self._out.append(encode(packet, self.profile))

    def _check_open(self) -> None:
        if self.state is State.CLOSED:
            raise self.error or StreamError("connection closed")

    def _finish(self, error: StreamError | None) -> None:
        self.state = State.CLOSED
        self.error = error
        self.sent.clear()
        self.overtaken.clear()
        self.in_flight = self.hole_bytes = 0
        self.lost.clear()
        self.send_streams.clear()
        self._send_order.clear()
        self.queued_bytes = 0
        self.events.append(Closed(error))
