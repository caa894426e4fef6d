"""The sending half of a Stream connection: stream bytes into DATA packets, ACKs, loss and the window.

Theory: queued stream bytes are cut into DATA packets, each with a fresh packet
number; lost data goes first, then new data, within the congestion window
(`Congestion`) and the pacing bucket, and within the peer's receive window per
stream (assumed the size of ours; a blocked stream probes its floor). ACKs
remove packets from `sent`; a packet sent at least `loss_delay_ns` before the
largest acked one is lost (its bytes go to `lost`, the window halves once per
round); a packet `reorder_threshold` below the largest acked has its data resent
at once but is declared lost only by that rule (`overtaken`). The tail-loss
timer, re-armed by every ACK, declares everything in flight lost when no ACK
comes. A stream whose FIN and every byte are acknowledged leaves `send_streams`
(its id stays in `used`: sending on it again is an error, never a new stream
the peer would take for a late duplicate). This object is the only writer of
every field it holds; the connection (connection.py) routes ACKs, timers and
polls to it once established.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from aeron_compat.marlin.congestion import Congestion
from aeron_compat.marlin.errors import StreamError, StreamLimitExceeded
from aeron_compat.marlin.events import AllAcked, Event, Writable
from aeron_compat.marlin.limits import StreamConfig
from aeron_compat.marlin.packets import Ack
from aeron_compat.marlin.ranges import StreamIds

PROBE_MIN_NS = 2_000_000  # a window probe waits at least this (and 2 srtt) after the packet's last send

SendData = Callable[[int, int, int, bytes, bool], None]
"""(stream id, packet number, offset, data, fin): how the sender hands a DATA packet to its connection."""


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

    def done(self) -> bool:
        """The FIN went and every packet of the stream, the FIN's too, was acknowledged."""
        self.floor()
        return self.fin_sent and not self.unacked


class Sender:
    """The send side of one connection (see the module docstring)."""

    def __init__(self, config: StreamConfig, now_ns: int, stats: dict[str, int], events: deque[Event],
                 send_data: SendData) -> None:
        self.config = config
        self.stats = stats
        self._events = events
        self._send_data = send_data
        self.send_streams: dict[int, SendStream] = {}  # live ones: a stream done (`SendStream.done`) leaves
        self.used = StreamIds(config.max_stream_id_ranges)  # every id a send stream ever had
        self.order: deque[int] = deque()  # streams with queued bytes, round robin
        self.queued_bytes = 0
        self.next_pn = 0
        self.sent: dict[int, SentPacket] = {}
        self.in_flight = 0  # bytes of every unacked packet
        self.hole_bytes = 0  # of those, bytes of packets below the largest acked (off the wire: see pipe)
        # lost data awaiting resend, a heap by (offset, stream): the lowest offsets first, so the hole the
        # receiver's reader waits on is filled before data its window may still refuse
        self.lost: list[tuple[int, int, bytes, bool]] = []
        self.largest_acked = -1
        self._scanned_pn = -1  # packets up to here were checked for the reordering threshold
        # packets overtaken by `reorder_threshold` later ones: data resent, the packet not yet declared
        # lost (the 50 ms rule or the tail-loss timer does that); pn -> send time, ascending
        self.overtaken: dict[int, int] = {}
        self.tlp_deadline: int | None = None
        self.abandoned = False  # the connection ended with bytes queued, lost or unacked (`clear`)
        self.cc = Congestion(mss=config.max_payload, cwnd=config.initial_cwnd_packets * config.max_payload,
                             min_cwnd=config.min_cwnd_packets * config.max_payload,
                             burst=config.pacing_burst_packets, srtt_ns=config.initial_rtt_ns,
                             max_cwnd=config.max_cwnd, growth=config.avoidance_growth_packets,
                             max_queue_delay_ns=config.max_queue_delay_ns,
                             max_ack_delay_ns=config.peer_max_ack_delay_ns)
        self.cc.last_refill_ns = now_ns

    def on_ack(self, ack: Ack, now_ns: int) -> None:
        newest: SentPacket | None = None
        sent = self.sent
        outstanding = bool(sent)
        oldest = min(next(iter(sent), ack.largest), next(iter(self.overtaken), ack.largest))
        acked = ack.acked(oldest)  # what is below the oldest unacked packet is settled already
        if self.overtaken and acked and acked[-1][0] <= next(reversed(self.overtaken)):
            self.settle_overtaken(acked)
        touched: set[int] = set()
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
                        if ss.fin_sent:
                            touched.add(sp.stream_id)
                    size = len(sp.data) or 1
                    self.in_flight -= size
                    if pn < self.largest_acked:
                        self.hole_bytes -= size  # a hole filled late (reordering)
                    self.cc.on_acked(len(sp.data), sp.sent_ns)
                    if pn == ack.largest:
                        newest = sp
        for sid in touched:
            if self.send_streams[sid].done():
                del self.send_streams[sid]
        if newest is not None and ack.largest > self.largest_acked:
            for pn in range(self.largest_acked + 1, ack.largest):  # packets this ACK skipped become holes
                hole = sent.get(pn)
                if hole is not None:
                    self.hole_bytes += len(hole.data) or 1
            self.largest_acked = ack.largest
            self.cc.on_rtt(now_ns - newest.sent_ns)
            self.resend_overtaken(now_ns)
            cutoff = newest.sent_ns - self.config.loss_delay_ns
            lost = []
            for pn, sp in sent.items():  # ascending packet numbers, so ascending send times: stop early
                if sp.sent_ns > cutoff or pn >= ack.largest:
                    break
                lost.append(pn)
            for pn in lost:
                self.mark_lost(pn, now_ns)
            self.expire_overtaken(cutoff, now_ns)
        self.tlp_deadline = now_ns + self.tlp_ns() if self.sent else None
        if outstanding and self.all_sent():
            self._events.append(AllAcked())

    def resend_overtaken(self, now_ns: int) -> None:
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

    def expire_overtaken(self, cutoff_ns: int, now_ns: int) -> None:
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

    def settle_overtaken(self, acked: list[tuple[int, int]]) -> None:
        """An overtaken packet acked after all was only reordered: no loss, no congestion event."""
        lows = [low for low, _ in reversed(acked)]  # ascending
        late = []
        for pn in self.overtaken:
            i = bisect.bisect_right(lows, pn) - 1
            if i >= 0 and pn <= acked[len(acked) - 1 - i][1]:
                late.append(pn)
        for pn in late:
            del self.overtaken[pn]

    def mark_lost(self, pn: int, now_ns: int) -> None:
        sp = self.sent[pn]
        self._forget(pn)
        self.stats["lost"] += 1
        self.cc.on_congestion(sp.sent_ns, now_ns)
        heapq.heappush(self.lost, (sp.offset, sp.stream_id, sp.data, sp.fin))

    def pipe(self) -> int:
        """Bytes in flight for the congestion window: unacked packets not below the largest acked.

        A packet sent before one the peer acked has left the wire (dropped, or overtaken); it stays
        unacked until acked late or declared lost by the 50 ms rule, but it no longer holds the
        window, so new data keeps flowing (and keeps producing the later ACKs the rule needs).
        """
        return self.in_flight - self.hole_bytes

    def tlp_ns(self) -> int:
        return max(self.config.min_tlp_ns, 3 * self.cc.srtt_ns + self.config.ack_delay_ns)

    def next_send_ns(self, now_ns: int) -> int | None:
        """When `poll` can next send data (None: nothing to send or the window is full)."""
        if not (self.lost or self.order):
            return None
        room = (self.cc.cwnd - self.pipe()) // self.config.max_payload
        if room < 1:
            return None
        if not self.lost and not self._rotate_to_open_stream(self.config.recv_window):
            probe = self._window_probe()  # every stream waits for the peer's window
            if probe is None:
                return None
            return max(self._probe_due(probe[1]), self.cc.next_send_ns(now_ns))
        return self.cc.next_send_ns(now_ns, room)

    def _rotate_to_open_stream(self, window: int) -> bool:
        """Rotate `order` until its first stream has window left; False if none has."""
        mss = self.config.max_payload
        for _ in range(len(self.order)):
            s = self.send_streams[self.order[0]]
            if s.next_offset + mss <= s.floor() + window:
                return True
            self.order.rotate(-1)
        return False

    def fill(self, now_ns: int) -> None:
        mss = self.config.max_payload
        window = self.config.recv_window
        sent_any = False
        while (self.lost or self.order) and self.pipe() + mss <= self.cc.cwnd and self.cc.may_send(now_ns):
            if self.lost:
                offset, sid, data, fin = heapq.heappop(self.lost)
                self.stats["retransmitted"] += 1
            else:
                sid = self.order[0]
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
                sid = self.order[0]
                s = self.send_streams[sid]
                heapq.heappush(s.unacked, s.next_offset)
                data = bytes(s.queued[:mss])
                del s.queued[:mss]
                offset = s.next_offset
                s.next_offset += len(data)
                self.queued_bytes -= len(data)
                fin = s.fin_queued and not s.queued
                s.fin_sent = fin
                self.order.popleft()
                if s.queued:
                    self.order.append(sid)
                sent_any = True
            self._send_packet(sid, offset, data, fin, now_ns)
        if sent_any:
            self._events.append(Writable())

    def _send_packet(self, sid: int, offset: int, data: bytes, fin: bool, now_ns: int) -> None:
        pn = self.next_pn
        self.next_pn += 1
        self.sent[pn] = SentPacket(sid, offset, data, fin, now_ns)
        self.in_flight += len(data) or 1
        self.cc.on_sent(len(data))
        self.stats["sent_packets"] += 1
        self._send_data(sid, pn, offset, data, fin)
        if self.tlp_deadline is None:
            self.tlp_deadline = now_ns + self.tlp_ns()

    def _window_probe(self) -> tuple[int, SentPacket] | None:
        """The unacked packet at the window floor of the first blocked stream (None: it is not in `sent`).

        When every stream is blocked by the peer's window, nothing new is sent, so no later packet can
        be acked and the 50 ms rule can never declare the floor's packet lost: only the tail-loss timer
        would. Instead that one packet is sent again (a window probe) `_probe_due` after its last send,
        without declaring a loss (no congestion event): the peer's window, not the path, is the limit.
        """
        sid = self.order[0]
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

    def send(self, stream_id: int, data: bytes, fin: bool, may_open: bool) -> None:
        """Queue `data` (and the FIN) on a stream; raises if the send buffer would overflow, or if the stream
        is new and `may_open` is false (the connection's `max_streams`), or if it was finished."""
        if not 0 <= stream_id <= 0xFFFF:
            raise ValueError("stream id out of range")
        if self.queued_bytes + len(data) > self.config.send_buffer:
            raise StreamLimitExceeded(f"send buffer of {self.config.send_buffer} bytes full")
        s = self.send_streams.get(stream_id)
        if s is None:
            if stream_id in self.used:
                raise StreamError(f"stream {stream_id} already finished")
            if not may_open:
                raise StreamLimitExceeded(f"more than {self.config.max_streams} streams")
            s = self.open(stream_id)
        if s.fin_queued:
            raise StreamError(f"stream {stream_id} already finished")
        if not data and not fin:
            return
        s.queued += data
        self.queued_bytes += len(data)
        s.fin_queued = fin
        if stream_id not in self.order:
            self.order.append(stream_id)

    def all_sent(self) -> bool:
        """Nothing queued, nothing lost awaiting resend, nothing unacked (and nothing dropped at a close)."""
        return not self.queued_bytes and not self.lost and not self.sent and not self.abandoned

    def open(self, stream_id: int) -> SendStream:
        """A new send stream (`Connection.open_stream`, or the first `send` on an id), nothing queued yet."""
        self.used.add(stream_id)
        s = self.send_streams[stream_id] = SendStream()
        return s

    def on_tail_loss(self, now_ns: int) -> None:
        """The tail-loss timer fired: everything in flight is lost."""
        self.tlp_deadline = None
        if self.sent:
            self.stats["tlp"] += 1
            for pn in sorted(self.sent):
                self.mark_lost(pn, now_ns)
            self.expire_overtaken(now_ns, now_ns)  # in flight too: lost (their data went already)

    def clear(self) -> None:
        """The connection ended: drop everything unsent and unacked (remembered as `abandoned`)."""
        self.abandoned = self.abandoned or not self.all_sent()
        self.sent.clear()
        self.overtaken.clear()
        self.in_flight = self.hole_bytes = 0
        self.lost.clear()
        self.send_streams.clear()
        self.order.clear()
        self.queued_bytes = 0
