"""Sans-I/O Aeron network publication: term appender plus sender.

Theory: `offer` appends frames (fragmenting by MTU, padding at term end and
rotating to the next term id) into a `TermLog`; `on_timer` / `send` copy
frames from the sender position up to the flow-control limit into MTU-sized
datagrams for every destination. Receivers' status messages (SM) set that
limit (position + window: the highest over live receivers for unicast, the
lowest for multi-destination-cast) and mark the publication connected. Until
a destination has answered, SETUP goes out every `setup_interval_ns`, and
again whenever an SM asks for it. NAKs resend the requested range at once,
then that range is ignored for `retransmit_linger_ns` (damping). When idle a
heartbeat (DATA of length 0) goes out; after `close` it carries the EOS flag.
RTTM probes get echoed. Offers fail with BACK_PRESSURED once the publisher is
`term_length / 2` ahead of the sender. Multi-destination-cast: `manual`
destinations come from `add_destination`; `dynamic` ones from SMs with the
SETUP flag and expire without SMs. Datagrams to send are collected in
`outbox` as (bytes, address).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aeron_compat.client.codes import MessageTooLongError, PublicationResult
from aeron_compat.native.codec import decode_datagram, encode_frame
from aeron_compat.native.frames import (
    DATA_HEADER,
    DATA_HEADER_LENGTH,
    AeronWireError,
    ErrorFrame,
    Flags,
    FrameType,
    Heartbeat,
    Nak,
    Rttm,
    Setup,
    StatusMessage,
    align,
)
from aeron_compat.native.publisher_config import (
    Address,
    Destination,
    DestinationMode,
    Outgoing,
    PublisherConfig,
    ReceiverState,
)
from aeron_compat.native.termlog import FRAME_LENGTH, PARTITIONS, TermLog, max_message_length

OfferCode = PublicationResult
"""Negative results of `offer`: the same codes (Aeron's values) as `Publication.offer`."""


@dataclass
class Publisher:
    """One network publication: append with `offer`, drive with `on_timer` / `on_datagram`."""

    config: PublisherConfig
    now_ns: int
    log: TermLog = field(init=False)
    position: int = field(init=False)
    sender_position: int = field(init=False)
    destinations: dict[Address, Destination] = field(default_factory=dict)
    receivers: dict[tuple[int, Address], ReceiverState] = field(default_factory=dict)
    outbox: list[Outgoing] = field(default_factory=list)
    closed_at_ns: int | None = None
    last_rtt_ns: int | None = None
    last_error: ErrorFrame | None = None
    naks_received: int = 0
    retransmits_sent: int = 0
    invalid_datagrams: int = 0

    def __post_init__(self) -> None:
        c = self.config
        self.log = TermLog(c.term_length, c.initial_term_id)
        self.position = self.sender_position = 0
        self._sender_limit = 0
        self._last_data_send_ns = self.now_ns - c.heartbeat_interval_ns
        self._last_setup_ns: int | None = None
        self._retransmits: dict[int, int] = {}
        self._last_rttm_reply_ns = self.now_ns - c.rttm_reply_interval_ns
        self.max_payload_length = c.mtu - DATA_HEADER_LENGTH
        self.max_message_length = max_message_length(c.term_length)
        self.term_window_length = c.term_length // 2
        self.max_position = c.term_length * (2**31)
        self._connected_until = self.now_ns

    def _refresh_connected(self) -> None:
        last = max((r.last_sm_ns for r in self.receivers.values()), default=None)
        self._connected_until = self.now_ns if last is None else last + self.config.connection_timeout_ns

    # ------------------------------------------------------------------ destinations

    def add_destination(self, address: Address, manual: bool = True) -> None:
        """Send to `address` too (unicast endpoint, or a manual MDC destination)."""
        if address not in self.destinations:
            self.destinations[address] = Destination(address, manual)
            self._last_setup_ns = None

    def remove_destination(self, address: Address) -> None:
        """Stop sending to `address` and forget its receivers."""
        self.destinations.pop(address, None)
        for key in [k for k in self.receivers if k[1] == address]:
            del self.receivers[key]
        self._refresh_connected()

    # ------------------------------------------------------------------ state

    def is_connected(self, now: int) -> bool:
        """Whether some receiver has sent an SM within the connection timeout."""
        return now < self._connected_until

    @property
    def position_limit(self) -> int:
        """Offers beyond this position are back pressured."""
        return self.sender_position + self.term_window_length

    @property
    def is_closed(self) -> bool:
        """Whether `close` was called."""
        return self.closed_at_ns is not None

    def is_finished(self, now: int) -> bool:
        """Closed, and either every receiver confirmed end of stream or the linger time passed."""
        if self.closed_at_ns is None:
            return False
        if now - self.closed_at_ns >= self.config.linger_ns:
            return True
        drained = self.sender_position == self.position
        return drained and bool(self.receivers) and all(r.end_of_stream for r in self.receivers.values())

    # ------------------------------------------------------------------ publishing

    def _space(self, length: int, now: int) -> int:
        """Bytes a message of `length` needs at the current position, or a negative `OfferCode`.

        A message that does not fit the rest of the term pads it out and gets ADMIN_ACTION (retry).
        """
        if self.closed_at_ns is not None:
            return OfferCode.CLOSED
        if length > self.max_message_length:
            raise MessageTooLongError(f"message of {length} bytes exceeds max message length {self.max_message_length}")
        if now >= self._connected_until:
            return OfferCode.NOT_CONNECTED
        position = self.position
        if position >= self.sender_position + self.term_window_length:
            return OfferCode.BACK_PRESSURED
        max_payload = self.max_payload_length
        if length <= max_payload:
            required = (length + DATA_HEADER_LENGTH + 31) & ~31
        else:
            full, rest = divmod(length, max_payload)
            required = full * (max_payload + DATA_HEADER_LENGTH) + (align(rest + DATA_HEADER_LENGTH) if rest else 0)
        if position + required > self.max_position:
            return OfferCode.MAX_POSITION_EXCEEDED
        term_offset = position & (self.log.term_length - 1)
        if term_offset + required > self.log.term_length:
            self.log.write_padding(position, self.config.session_id, self.config.stream_id)
            self.position += self.log.term_length - term_offset
            return OfferCode.ADMIN_ACTION
        return required

    def offer(self, payload: bytes | bytearray | memoryview, now: int, reserved_value: int = 0) -> int:
        """Append one message; the new position, or a negative `OfferCode`."""
        length = len(payload)
        required = self._space(length, now)
        if required < 0:
            return required
        if length <= self.max_payload_length:  # the common case, inlined
            log, position = self.log, self.position
            term_offset = position & (log.term_length - 1)
            buf = log.terms[(position >> log.shift) % PARTITIONS]
            buf[term_offset + DATA_HEADER_LENGTH : term_offset + DATA_HEADER_LENGTH + length] = payload
            DATA_HEADER.pack_into(buf, term_offset, length + DATA_HEADER_LENGTH, 0, Flags.UNFRAGMENTED,
                                  FrameType.DATA, term_offset, self.config.session_id, self.config.stream_id,
                                  log.term_id(position), reserved_value)
            self.position = position + required
        else:
            self._append(memoryview(payload).cast("B"), reserved_value)
        return self.position

    def claim(self, length: int, now: int) -> int:
        """Reserve one unfragmented frame for `length` payload bytes: its start position, or a negative
        `OfferCode`. The sender stops at the reservation until `commit_claim` or `abort_claim`."""
        if length > self.max_payload_length:
            raise MessageTooLongError(f"a claim of {length} bytes exceeds max payload {self.max_payload_length}")
        required = self._space(length, now)
        if required < 0:
            return required
        start = self.position
        c = self.config
        self.log.write_header(start, -(length + DATA_HEADER_LENGTH), Flags.UNFRAGMENTED, FrameType.DATA, c.session_id,
                              c.stream_id, 0)
        self.position += required
        return start

    def commit_claim(self, start: int, payload: bytes | bytearray | memoryview, reserved_value: int) -> None:
        """Fill and publish the frame reserved at `start`."""
        c, log = self.config, self.log
        off = log.term_offset(start)
        log.partition(start)[off + DATA_HEADER_LENGTH : off + DATA_HEADER_LENGTH + len(payload)] = payload
        log.write_header(start, len(payload) + DATA_HEADER_LENGTH, Flags.UNFRAGMENTED, FrameType.DATA, c.session_id,
                         c.stream_id, reserved_value)

    def abort_claim(self, start: int, length: int) -> None:
        """Turn the frame reserved at `start` into padding that receivers skip."""
        c = self.config
        self.log.write_header(start, align(length + DATA_HEADER_LENGTH), Flags.UNFRAGMENTED, FrameType.PAD,
                              c.session_id, c.stream_id, 0)

    def _append(self, data: memoryview, reserved_value: int) -> None:
        c, log = self.config, self.log
        max_payload = self.max_payload_length
        remaining = len(data)
        start = 0
        flags = Flags.BEGIN
        while True:
            chunk = min(remaining, max_payload)
            if chunk == remaining:
                flags |= Flags.END
            buf = log.partition(self.position)
            off = log.term_offset(self.position)
            buf[off + DATA_HEADER_LENGTH : off + DATA_HEADER_LENGTH + chunk] = data[start : start + chunk]
            log.write_header(self.position, DATA_HEADER_LENGTH + chunk, flags, FrameType.DATA, c.session_id,
                             c.stream_id, reserved_value)
            self.position += align(DATA_HEADER_LENGTH + chunk)
            start += chunk
            remaining -= chunk
            flags = 0
            if remaining == 0:
                return

    def close(self, now: int) -> None:
        """No more offers; heartbeats now carry end of stream until `is_finished`."""
        if self.closed_at_ns is None:
            self.closed_at_ns = now
            self._last_data_send_ns = now - self.config.heartbeat_interval_ns

    # ------------------------------------------------------------------ sending

    def _emit(self, datagram: bytes) -> None:
        for dest in self.destinations.values():
            self.outbox.append((datagram, dest.address))

    def _batch(self, start: int, stop: int) -> tuple[bytes, int]:
        """One datagram of whole frames from `start` (below `stop`, within one term and the MTU)."""
        log, mtu = self.log, self.config.mtu
        buf = log.terms[(start >> log.shift) % PARTITIONS]
        first = start & (log.term_length - 1)
        end = first + min(stop - start, log.term_length - first, mtu)
        off = first
        skipped = 0  # padding bytes covered by a PAD header but not sent
        while off < end:
            (length,) = FRAME_LENGTH.unpack_from(buf, off)
            if length <= 0:
                break
            if buf[off + 6] == FrameType.PAD and buf[off + 7] == 0:
                off += DATA_HEADER_LENGTH
                skipped = length - DATA_HEADER_LENGTH
                break
            aligned = (length + 31) & ~31
            if off + aligned > end:
                break
            off += aligned
        return bytes(buf[first:off]), start + (off - first) + skipped

    def send(self, now: int) -> int:
        """Send what flow control allows now; returns the number of datagrams produced."""
        stop = min(self.position, self._sender_limit)
        sent = 0
        while self.sender_position < stop and self.destinations:
            datagram, nxt = self._batch(self.sender_position, stop)
            if nxt == self.sender_position:
                break
            self._emit(datagram)
            self.sender_position = nxt
            sent += 1
        if sent:
            self._last_data_send_ns = now
        return sent

    def _setup_frame(self) -> bytes:
        c, log = self.config, self.log
        return encode_frame(Setup(log.term_offset(self.sender_position), c.session_id, c.stream_id,
                                  c.initial_term_id, log.term_id(self.sender_position), c.term_length, c.mtu, c.ttl))

    def _heartbeat(self) -> bytes:
        c, log = self.config, self.log
        flags = Flags.UNFRAGMENTED
        if self.closed_at_ns is not None and self.sender_position == self.position:
            flags |= Flags.EOS
        return encode_frame(Heartbeat(log.term_offset(self.sender_position), c.session_id, c.stream_id,
                                      log.term_id(self.sender_position), flags))

    def on_timer(self, now: int) -> None:
        """Periodic work: SETUP to unanswered destinations, data, heartbeats, expiries."""
        c = self.config
        for addr in [a for a, d in self.destinations.items() if not d.manual and d.last_sm_ns is not None
                     and now - d.last_sm_ns > c.receiver_timeout_ns]:
            self.remove_destination(addr)
        for key in [k for k, r in self.receivers.items() if now - r.last_sm_ns > c.receiver_timeout_ns]:
            del self.receivers[key]
            self._refresh_connected()
        if self._last_setup_ns is None or now - self._last_setup_ns >= c.setup_interval_ns:
            pending = [d for d in self.destinations.values() if d.last_sm_ns is None]
            if pending:
                setup = self._setup_frame()
                self.outbox.extend((setup, d.address) for d in pending)
                self._last_setup_ns = now
        self.send(now)
        if self.receivers and now - self._last_data_send_ns >= c.heartbeat_interval_ns:
            self._emit(self._heartbeat())
            self._last_data_send_ns = now
        expired = [k for k, t in self._retransmits.items() if t <= now]
        for k in expired:
            del self._retransmits[k]

    def probe_rtt(self, now: int, receiver_id: int = 0) -> None:
        """Send an RTTM asking receivers to echo `now`; the answer sets `last_rtt_ns`."""
        c = self.config
        self._emit(encode_frame(Rttm(c.session_id, c.stream_id, now, 0, receiver_id, Flags.RTTM_REPLY)))

    # ------------------------------------------------------------------ control input

    def on_datagram(self, data: bytes, source: Address, now: int) -> None:
        """Handle a control datagram (SM, NAK, RTTM, ERR) from `source`."""
        try:
            frames = decode_datagram(data)
        except AeronWireError:
            self.invalid_datagrams += 1
            return
        for frame in frames:
            if isinstance(frame, StatusMessage):
                self._on_sm(frame, source, now)
            elif isinstance(frame, Nak):
                self._on_nak(frame, now)
            elif isinstance(frame, Rttm):
                self._on_rttm(frame, source, now)
            elif isinstance(frame, ErrorFrame) and self._mine(frame.session_id, frame.stream_id):
                self.last_error = frame

    def _mine(self, session_id: int, stream_id: int) -> bool:
        return session_id == self.config.session_id and stream_id == self.config.stream_id

    def _on_sm(self, sm: StatusMessage, source: Address, now: int) -> None:
        c = self.config
        elicit = bool(sm.flags & Flags.SM_SETUP)
        if c.mode is DestinationMode.DYNAMIC and (self._mine(sm.session_id, sm.stream_id) or
                                                  (elicit and sm.session_id == 0 and sm.stream_id == 0)):
            if source not in self.destinations:
                self.destinations[source] = Destination(source, manual=False)
            self.destinations[source].last_sm_ns = now
        if not self._mine(sm.session_id, sm.stream_id):
            if elicit and sm.session_id == 0 and sm.stream_id == 0 and source in self.destinations:
                self.outbox.append((self._setup_frame(), source))
            return
        dest = self.destinations.get(source)
        if dest is not None:
            dest.last_sm_ns = now
        elif c.mode is DestinationMode.UNICAST and len(self.destinations) == 1:
            next(iter(self.destinations.values())).last_sm_ns = now
        if elicit:
            self.outbox.append((self._setup_frame(), source))
            return
        limit = self.log.position(sm.consumption_term_id, sm.consumption_term_offset) + sm.receiver_window
        key = (sm.receiver_id or 0, source)
        state = self.receivers.get(key)
        if state is None:
            self.receivers[key] = ReceiverState(limit, now, bool(sm.flags & Flags.SM_EOS))
        else:
            state.limit = max(state.limit, limit)
            state.last_sm_ns = now
            state.end_of_stream = bool(sm.flags & Flags.SM_EOS)
        self._connected_until = max(self._connected_until, now + c.connection_timeout_ns)
        limits = [r.limit for r in self.receivers.values()]
        # unicast follows the freshest receiver (a restarted one must not wait for the old one to expire);
        # multi-destination-cast the slowest, so no destination is overrun
        fc_limit = max(limits) if c.mode is DestinationMode.UNICAST else min(limits)
        self._sender_limit = max(self.sender_position, fc_limit)
        self.send(now)

    def _on_nak(self, nak: Nak, now: int) -> None:
        if not self._mine(nak.session_id, nak.stream_id):
            return
        self.naks_received += 1
        start = self.log.position(nak.term_id, nak.term_offset)
        in_log = self.sender_position - self.config.term_length <= start < self.sender_position
        if not in_log or start % 32 or nak.length <= 0:
            return
        if self._retransmits.get(start, now) > now or len(self._retransmits) >= self.config.max_retransmits:
            return
        self._retransmits[start] = now + self.config.retransmit_linger_ns
        term_end = start - self.log.term_offset(start) + self.config.term_length
        stop = min(start + nak.length, self.sender_position, term_end)
        pos = start
        while pos < stop:
            datagram, nxt = self._batch(pos, self.sender_position)
            if nxt == pos:
                break
            self._emit(datagram)
            self.retransmits_sent += 1
            pos = nxt

    def _on_rttm(self, rttm: Rttm, source: Address, now: int) -> None:
        if not self._mine(rttm.session_id, rttm.stream_id):
            return
        if rttm.flags & Flags.RTTM_REPLY:
            if now - self._last_rttm_reply_ns >= self.config.rttm_reply_interval_ns:
                self._last_rttm_reply_ns = now
                reply = Rttm(rttm.session_id, rttm.stream_id, rttm.echo_timestamp, 0, rttm.receiver_id)
                self.outbox.append((encode_frame(reply), source))
        else:
            self.last_rtt_ns = now - rttm.echo_timestamp - rttm.reception_delta
