"""One Stream connection as a sans-I/O state machine: packets and time in, datagrams and events out.

Theory: the handshake states live in `State` and change only in `_on_handshake`
(DIAL_SENT -> ESTABLISHED on DIALCONF; DIAL_RECV -> ESTABLISHED on DIALCONF
(simultaneous open) or CONF or the peer's first DATA; DIAL/DIALCONF resent on
a doubling timer until `handshake_tries` run out). Once established, the
sending half (`Sender`, sending.py: packets, ACKs received, loss, the
congestion and receive windows) owns everything sent; this object owns the
handshake, the receiving half (packet numbers for ACKs, sent at once on a
gap or after `ack_every` packets, else after `ack_delay_ns`, repeated once
if nothing followed; streams reassembled by offset) and the timers.
`poll(now)` returns the datagrams to send now; `next_timer()` says when to
call `on_timer` (and `poll`) again.

A stream's two halves end apart: the receiving one when the FIN arrived and
the application read every byte, the sending one (`Sender`) when its FIN and
every byte were acknowledged. An ended half leaves its table and stops
counting toward `max_streams`; its id stays used (`StreamIds`, bounded
ranges), so a late duplicate DATA or FIN is acknowledged (the peer may still
be resending it) and dropped: never a new stream, never bytes delivered twice.
"""

from __future__ import annotations

import enum
from collections import deque

from aeron_compat.marlin.congestion import Congestion
from aeron_compat.marlin.errors import (
    StreamError,
    StreamLimitExceeded,
    StreamProtocolError,
    StreamReset,
    StreamTimeout,
)
from aeron_compat.marlin.events import AllAcked, Closed, Established, Event, Readable, StreamOpened, Writable
from aeron_compat.marlin.limits import StreamConfig
from aeron_compat.marlin.packets import Ack, Conf, Data, Dial, DialConf, Packet, Profile, Rst, encode
from aeron_compat.marlin.ranges import StreamIds
from aeron_compat.marlin.recv import ReceivedPackets, RecvStream
from aeron_compat.marlin.sending import Sender, SendStream, SentPacket

__all__ = ["Address", "AllAcked", "Closed", "Connection", "Established", "Event", "Readable", "SentPacket", "State",
           "StreamOpened", "Writable"]

Address = tuple[str, int]
MAX_ACK_ENTRIES = 129  # the 65 newest ranges (one ACK per received batch: a lost ACK leaves none unacked)


class State(enum.Enum):
    """Handshake state (the seed's names)."""

    DIAL_SENT = "DIAL_SENT"
    DIAL_RECV = "DIAL_RECV"
    ESTABLISHED = "ESTABLISHED"
    CLOSED = "CLOSED"




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
        self.recv_streams: dict[int, RecvStream] = {}  # live ones: a finished stream (all read) leaves
        self.recv_used = StreamIds(config.max_stream_id_ranges)  # every id a receive stream ever had
        self.recv_held = 0  # bytes all recv_streams hold (readable + out of order), within recv_connection_window
        self.received = ReceivedPackets(config.max_ack_ranges)
        self._ack_pending = 0
        self._ack_now = False  # an ACK is due at the next poll
        self._ack_deadline: int | None = None
        self._ack_repeat_at: int | None = None  # the last ACK goes again then, unless another went since
        self._next_local_stream = 0
        self.stats = {"sent_packets": 0, "retransmitted": 0, "lost": 0, "tlp": 0, "dup_packets": 0, "probes": 0,
                      "early_resent": 0, "late_packets": 0}
        self.tx = Sender(config, now_ns, self.stats, self.events, self._send_data)
        """The sending half: the only writer of what was sent, acked and lost."""
        if dialer:
            self._emit(Dial(local_id, 0, dial_payload))
        else:
            self._emit(DialConf(local_id, peer_id, dialconf_payload))

    # the sending half's state, read through the connection (tests, the adapter, stats)
    @property
    def send_streams(self) -> dict[int, SendStream]:
        """Our send streams by stream ID."""
        return self.tx.send_streams

    @property
    def sent(self) -> dict[int, SentPacket]:
        """Packets sent and not yet acknowledged, by packet number."""
        return self.tx.sent

    @property
    def lost(self) -> list[tuple[int, int, bytes, bool]]:
        """Data declared lost and waiting to be resent: (stream ID, offset, bytes, fin)."""
        return self.tx.lost

    @property
    def overtaken(self) -> dict[int, int]:
        """Packets overtaken by later acknowledged ones (resent early), by packet number."""
        return self.tx.overtaken

    @property
    def cc(self) -> Congestion:
        """The congestion controller (window, pacing, RTT)."""
        return self.tx.cc

    @property
    def hole_bytes(self) -> int:
        """Bytes sent but neither acknowledged nor declared lost behind an acknowledged packet."""
        return self.tx.hole_bytes

    @property
    def queued_bytes(self) -> int:
        """Bytes the application wrote that have not been sent yet."""
        return self.tx.queued_bytes

    # ------------------------------------------------------------------ application side
    def live_streams(self) -> int:
        """Streams with a half not yet ended: what `max_streams` bounds."""
        return len(self.send_streams.keys() | self.recv_streams.keys())

    def open_stream(self) -> int:
        """A new stream id of this side's parity (the smaller connection id uses even ids), never used before.

        Ids are never reused (a late duplicate could not be told from the new stream), so a connection
        opens at most 32,768 streams of its own in its life (the seed's ids are 16 bits).
        """
        if self.live_streams() >= self.config.max_streams:
            raise StreamLimitExceeded(f"more than {self.config.max_streams} streams")
        parity = 0 if self.local_id < self.peer_id else 1
        while True:
            sid = self._next_local_stream * 2 + parity
            self._next_local_stream += 1
            if sid > 0xFFFF:
                raise StreamLimitExceeded("stream ids exhausted")
            if sid not in self.tx.used and sid not in self.recv_used:
                self.tx.open(sid)
                return sid

    def send(self, stream_id: int, data: bytes, fin: bool = False) -> None:
        """Queue `data` (and the FIN) on a stream; raises if the send buffer would overflow, or if this side
        already finished that stream."""
        self._check_open()
        may_open = (stream_id in self.send_streams or stream_id in self.recv_streams
                    or self.live_streams() < self.config.max_streams)
        self.tx.send(stream_id, data, fin, may_open)

    def send_room(self) -> int:
        """Bytes `send` accepts now."""
        return self.config.send_buffer - self.tx.queued_bytes

    def read(self, stream_id: int, limit: int = -1) -> bytes:
        """In-order bytes received on a stream (b"" when none yet or at the end)."""
        s = self.recv_streams.get(stream_id)
        if s is None:
            return b""
        data = s.read(limit)
        self.recv_held -= len(data)
        if s.finished:
            del self.recv_streams[stream_id]
        return data

    def at_eof(self, stream_id: int) -> bool:
        """The peer's FIN arrived and all bytes before it were read."""
        return stream_id not in self.recv_streams and stream_id in self.recv_used

    def close(self) -> None:
        """Reset the connection now (the seed has no graceful close beyond each stream's FIN)."""
        if self.state is not State.CLOSED:
            if self.peer_id:
                self._emit(Rst(self.local_id, self.peer_id))
            self._finish(None)

    def all_sent(self) -> bool:
        """Nothing queued, nothing lost awaiting resend, nothing unacked: the peer acknowledged every byte.

        False forever once the connection ended with bytes it never got acknowledged.
        """
        return self.tx.all_sent()

    def state_sizes(self) -> dict[str, int]:
        """Every bounded per-connection structure's current size."""
        return {
            "streams": self.live_streams(),
            "stream_id_ranges": len(self.tx.used) + len(self.recv_used),
            "send_queued_bytes": self.queued_bytes,
            "sent_unacked": len(self.sent),
            "lost_pending": len(self.lost),
            "overtaken": len(self.overtaken),
            "ack_ranges": len(self.received),
            "recv_buffered_bytes": self.recv_held,
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
                self.tx.on_ack(packet, now_ns)
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
        sid = p.stream_id
        s = self.recv_streams.get(sid)
        if s is None and sid in self.recv_used:
            self.stats["late_packets"] += 1  # the stream ended here: acked (its sender may be resending), dropped
        else:
            if s is None:
                if self.live_streams() >= self.config.max_streams and sid not in self.send_streams:
                    return  # refused: not acked, so the peer retries once streams have closed
                s = self.recv_streams[sid] = RecvStream(self.config.recv_window, self.config.max_recv_chunks)
                self.recv_used.add(sid)
                if sid not in self.tx.used:
                    self.events.append(StreamOpened(sid))
            before = (len(s.readable), s.fin_offset)
            held = s.held
            if not s.accept(p.offset, p.data, p.fin, self.config.recv_connection_window - self.recv_held):
                return
            self.recv_held += s.held - held
            if (len(s.readable), s.fin_offset) != before or (p.fin and s.finished):
                self.events.append(Readable(sid))
            if s.finished:  # a FIN after every byte was read
                del self.recv_streams[sid]
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
        if self.tx.tlp_deadline is not None:
            times.append(self.tx.tlp_deadline)
        return min(times)

    def next_send_ns(self, now_ns: int) -> int | None:
        """When `poll` can next send data (None: nothing to send or the window is full)."""
        return self.tx.next_send_ns(now_ns) if self.state is State.ESTABLISHED else None

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
        if self.tx.tlp_deadline is not None and now_ns >= self.tx.tlp_deadline:
            self.tx.on_tail_loss(now_ns)

    def poll(self, now_ns: int) -> list[bytes]:
        """Datagrams to send now: control packets, then lost data, then new data, paced."""
        if self.state is State.ESTABLISHED:
            if self._ack_now:
                self._send_ack(now_ns)
            self.tx.fill(now_ns)
        out, self._out = self._out, []
        return out

    # ------------------------------------------------------------------ internals
    def _send_data(self, sid: int, pn: int, offset: int, data: bytes, fin: bool) -> None:
        self._emit(Data(self.local_id, self.peer_id, sid, pn, offset, data, fin))

    def _emit(self, packet: Packet) -> None:
        self._out.append(encode(packet, self.profile))

    def _check_open(self) -> None:
        if self.state is State.CLOSED:
            raise self.error or StreamError("connection closed")

    def _finish(self, error: StreamError | None) -> None:
        self.state = State.CLOSED
        self.error = error
        self.tx.clear()
        self.events.append(Closed(error))
