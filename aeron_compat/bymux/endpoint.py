"""The sans-I/O bymux endpoint: bytes in, events and bytes out.

Theory of operation: `receive_data` parses packet heads as bytes arrive and
checks each against the spec's rules before acting on it; a breach raises
`ConnectionTerminated` naming the rule and closes the endpoint for good. A
Write's data is delivered as it arrives (its length was credit-checked from
the head), so memory never holds more than one partial head.
Obligations are met here, not by the caller (at once, so a stream whose
peer sent both Close and StopRead is always ended, and any later packet for
it fails as an unknown stream): a Ping is answered with a Pong,
Close with StopRead and StopRead with Close (for streams and globally).
Local calls check the same rules from our side and raise `UsageError`
without changing anything.
Output: control packets (creations, credit, pings, pongs, StopRead, Close
answering a StopRead) leave first, in call order; then streams with queued
data take turns, one packet of at most `max_packet_size` bytes each, round
robin; a stream's local Close leaves after its data. A stream's state is
dropped, and its id freed, once Close and StopRead were both sent and
received. Spec: bymux, Appendix A for the state kept.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from .codec import PacketHead, PacketType, UndefinedPacketType, decode_head, encode_head, width_code
from .credit import INFINITE, CreditOnInfinite, CreditOverflow, add_credit, consume_credit
from .errors import ConnectionTerminated, Rule, UsageError
from .events import (
    CloseReceived,
    CreditReceived,
    DataReceived,
    Event,
    PongReceived,
    StopReadReceived,
    StreamEnded,
    StreamOpened,
)
from .state import GlobalState, StreamState
from .streams import StreamTable

DEFAULT_MAX_PACKET_SIZE = 16 * 1024
"""The largest packet an endpoint sends unless told otherwise (`max_packet_size=`)."""
_MIN_PACKET_SIZE = 1 + 8 + 8 + 1


class Endpoint:
    """One side of a bymux connection.

    `initiator` (the spec's proactive endpoint) creates even ids, the other
    side odd ones. `creator_credit` is the credit we start with on streams we
    create, `other_credit` the credit the peer starts with on streams it
    creates; the peer must be configured the other way round.
    """

    def __init__(
        self,
        initiator: bool,
        *,
        creator_credit: int = 0,
        other_credit: int = 0,
        max_packet_size: int = DEFAULT_MAX_PACKET_SIZE,
    ) -> None:
        if max_packet_size < _MIN_PACKET_SIZE:
            raise ValueError(f"max_packet_size must be at least {_MIN_PACKET_SIZE}")
        self.initiator = initiator
        self.creator_credit = creator_credit
        self.other_credit = other_credit
        self.max_packet_size = max_packet_size
        self.glob = GlobalState()
        self._streams = StreamTable(0 if initiator else 1)
        self._control: list[bytes] = []
        self._turns: deque[int] = deque()
        self._inbuf = bytearray()
        self._write_left = 0
        self._write_stream: StreamState | None = None
        self._events: deque[Event] = deque()
        self._terminated: ConnectionTerminated | None = None
        self._handlers: dict[tuple[PacketType, bool], Callable[[PacketHead], None]] = {
            (PacketType.CREDIT, False): self._on_credit,
            (PacketType.WRITE, False): self._on_write,
            (PacketType.PING, False): self._on_ping,
            (PacketType.PONG, False): self._on_pong,
            (PacketType.CLOSE, False): self._on_close,
            (PacketType.STOP_READ, False): self._on_stop_read,
            (PacketType.CREDIT, True): self._on_global_credit,
            (PacketType.WRITE, True): self._on_create,
            (PacketType.PING, True): self._on_global_ping,
            (PacketType.PONG, True): self._on_global_pong,
            (PacketType.CLOSE, True): self._on_global_close,
            (PacketType.STOP_READ, True): self._on_global_stop_read,
        }

    # ------------------------------------------------------------ inspection

    @property
    def closed(self) -> bool:
        """Whether the connection was terminated."""
        return self._terminated is not None

    @property
    def stream_ids(self) -> list[int]:
        """Ids of the active streams, ascending."""
        return sorted(self._streams)

    def stream(self, stream_id: int) -> StreamState:
        """The state of an active stream (KeyError if not active)."""
        return self._streams[stream_id]

    def is_active(self, stream_id: int) -> bool:
        """Whether `stream_id` names an active stream."""
        return stream_id in self._streams

    @property
    def buffered_bytes(self) -> int:
        """Bytes held inside the endpoint: unparsed input plus queued output data."""
        return len(self._inbuf) + sum(s.queued for s in self._streams.states()) + sum(map(len, self._control))

    def summary(self) -> dict[str, object]:
        """The spec-visible state (Appendix A), for vectors and tests."""
        return {
            "closed": self.closed,
            "global": self.glob.summary(),
            "streams": {str(i): self._streams[i].summary() for i in sorted(self._streams)},
        }

    # ------------------------------------------------------------- receiving

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the peer, in any chunking."""
        self._check_open()
        self._inbuf += data
        try:
            self._parse()
        except ConnectionTerminated as exc:
            self._terminated = exc
            self._inbuf.clear()
            raise

    def next_event(self) -> Event | None:
        """The oldest unread event, or None."""
        return self._events.popleft() if self._events else None

    def _parse(self) -> None:
        buf = self._inbuf
        pos = 0
        try:
            while True:
                if self._write_left:
                    n = min(self._write_left, len(buf) - pos)
                    if n == 0:
                        break
                    self._write_left -= n
                    stream = self._write_stream
                    assert stream is not None
                    if not stream.sent_stop_read:
                        self._events.append(DataReceived(stream.stream_id, bytes(buf[pos : pos + n])))
                    pos += n
                    continue
                try:
                    parsed = decode_head(buf, pos)
                except UndefinedPacketType as exc:
                    raise ConnectionTerminated(Rule.UNDEFINED_PACKET_TYPE, str(exc)) from None
                if parsed is None:
                    break
                head, pos = parsed
                self._handlers[head.type, head.is_global](head)
        finally:
            del buf[:pos]

    def _active(self, head: PacketHead) -> StreamState:
        assert head.stream_id is not None
        stream = self._streams.get(head.stream_id)
        if stream is None:
            raise ConnectionTerminated(Rule.UNKNOWN_STREAM, f"{head.type.name} for stream {head.stream_id}")
        return stream

    def _on_credit(self, head: PacketHead) -> None:
        stream = self._active(head)
        if stream.received_stop_read:
            raise ConnectionTerminated(Rule.CREDIT_AFTER_STOP_READ, f"stream {stream.stream_id}")
        try:
            stream.send_credit = add_credit(stream.send_credit, head.value)
        except CreditOverflow as exc:
            raise ConnectionTerminated(Rule.CREDIT_OVERFLOW, f"stream {stream.stream_id}: {exc}") from None
        except CreditOnInfinite as exc:
            raise ConnectionTerminated(Rule.CREDIT_ON_INFINITE, f"stream {stream.stream_id}: {exc}") from None
        self._events.append(CreditReceived(stream.stream_id, head.value))

    def _on_write(self, head: PacketHead) -> None:
        stream = self._active(head)
        if stream.received_close:
            raise ConnectionTerminated(Rule.WRITE_AFTER_CLOSE, f"stream {stream.stream_id}")
        try:
            stream.recv_credit = consume_credit(stream.recv_credit, head.value)
        except ValueError as exc:
            raise ConnectionTerminated(Rule.WRITE_BEYOND_CREDIT, f"stream {stream.stream_id}: {exc}") from None
        self._write_left = head.value
        self._write_stream = stream

    def _on_ping(self, head: PacketHead) -> None:
        stream = self._active(head)
        if not (stream.sent_close and stream.sent_stop_read):
            self._control.append(encode_head(PacketHead(PacketType.PONG, stream.stream_id)))

    def _on_pong(self, head: PacketHead) -> None:
        stream = self._active(head)
        self._events.append(PongReceived(stream.stream_id))

    def _on_close(self, head: PacketHead) -> None:
        stream = self._active(head)
        if stream.received_close:
            raise ConnectionTerminated(Rule.CLOSE_AFTER_CLOSE, f"stream {stream.stream_id}")
        stream.received_close = True
        self._events.append(CloseReceived(stream.stream_id))
        if not stream.sent_stop_read:
            self._send_stop_read(stream)
        self._maybe_end(stream)

    def _on_stop_read(self, head: PacketHead) -> None:
        stream = self._active(head)
        if stream.received_stop_read:
            raise ConnectionTerminated(Rule.STOP_READ_AFTER_STOP_READ, f"stream {stream.stream_id}")
        stream.received_stop_read = True
        self._events.append(StopReadReceived(stream.stream_id))
        if not stream.sent_close:
            stream.drop_output()
            stream.close_pending = False
            stream.sent_close = True
            self._control.append(encode_head(PacketHead(PacketType.CLOSE, stream.stream_id)))
        self._maybe_end(stream)

    def _on_global_credit(self, head: PacketHead) -> None:
        if self.glob.received_stop_read:
            raise ConnectionTerminated(Rule.GLOBAL_CREDIT_AFTER_GLOBAL_STOP_READ)
        try:
            self.glob.send_credit = add_credit(self.glob.send_credit, head.value)
        except CreditOverflow as exc:
            raise ConnectionTerminated(Rule.GLOBAL_CREDIT_OVERFLOW, str(exc)) from None
        except CreditOnInfinite as exc:
            raise ConnectionTerminated(Rule.GLOBAL_CREDIT_ON_INFINITE, str(exc)) from None
        self._events.append(CreditReceived(None, head.value))

    def _on_create(self, head: PacketHead) -> None:
        stream_id = head.value
        if self.glob.received_close:
            raise ConnectionTerminated(Rule.CREATE_AFTER_GLOBAL_CLOSE, f"stream {stream_id}")
        if stream_id % 2 == (0 if self.initiator else 1):
            raise ConnectionTerminated(Rule.CREATE_WRONG_PARITY, f"stream {stream_id}")
        if stream_id in self._streams:
            raise ConnectionTerminated(Rule.CREATE_ACTIVE_ID, f"stream {stream_id}")
        try:
            self.glob.recv_credit = consume_credit(self.glob.recv_credit, 1)
        except ValueError:
            raise ConnectionTerminated(Rule.CREATE_WITHOUT_GLOBAL_CREDIT, f"stream {stream_id}") from None
        self._streams.add(StreamState(stream_id, send_credit=0, recv_credit=self.other_credit))
        self._events.append(StreamOpened(stream_id))

    def _on_global_ping(self, head: PacketHead) -> None:
        if self.glob.received_close and self.glob.received_stop_read:
            raise ConnectionTerminated(Rule.GLOBAL_PING_AFTER_END)
        if not (self.glob.sent_close and self.glob.sent_stop_read):
            self._control.append(encode_head(PacketHead(PacketType.PONG, None)))

    def _on_global_pong(self, head: PacketHead) -> None:
        if self.glob.received_close and self.glob.received_stop_read:
            raise ConnectionTerminated(Rule.GLOBAL_PONG_AFTER_END)
        self._events.append(PongReceived(None))

    def _on_global_close(self, head: PacketHead) -> None:
        if self.glob.received_close:
            raise ConnectionTerminated(Rule.GLOBAL_CLOSE_AFTER_GLOBAL_CLOSE)
        self.glob.received_close = True
        self._events.append(CloseReceived(None))
        if not self.glob.sent_stop_read:
            self.glob.sent_stop_read = True
            self._control.append(encode_head(PacketHead(PacketType.STOP_READ, None)))

    def _on_global_stop_read(self, head: PacketHead) -> None:
        if self.glob.received_stop_read:
            raise ConnectionTerminated(Rule.GLOBAL_STOP_READ_AFTER_GLOBAL_STOP_READ)
        self.glob.received_stop_read = True
        self._events.append(StopReadReceived(None))
        if not self.glob.sent_close:
            self.glob.sent_close = True
            self._control.append(encode_head(PacketHead(PacketType.CLOSE, None)))

    # ----------------------------------------------------------- local calls

    def _check_open(self) -> None:
        if self._terminated is not None:
            raise self._terminated

    def _own(self, stream_id: int) -> StreamState:
        self._check_open()
        stream = self._streams.get(stream_id)
        if stream is None:
            raise UsageError(f"stream {stream_id} is not active")
        return stream

    def open_stream(self, stream_id: int | None = None) -> int:
        """Create a stream (costs one global credit); returns its id.

        Without `stream_id`, a freed id of our parity is reused, else the next unused one.
        """
        self._check_open()
        if self.glob.sent_close:
            raise UsageError("we sent a global Close: no more streams")
        if self.glob.send_credit == 0:
            raise UsageError("no global credit to create a stream")
        parity = 0 if self.initiator else 1
        if stream_id is None:
            stream_id = self._streams.pick()
        elif stream_id % 2 != parity or not 0 <= stream_id <= INFINITE:
            raise UsageError(f"stream id {stream_id} has the wrong parity or range")
        elif stream_id in self._streams:
            raise UsageError(f"stream id {stream_id} is still active")
        self.glob.send_credit = consume_credit(self.glob.send_credit, 1)
        self._streams.add(StreamState(stream_id, send_credit=self.creator_credit, recv_credit=0))
        self._control.append(encode_head(PacketHead(PacketType.WRITE, None, stream_id)))
        return stream_id

    def write(self, stream_id: int, data: bytes) -> None:
        """Queue `data` on a stream; it must fit the credit we have."""
        stream = self._own(stream_id)
        if stream.sent_close or stream.close_pending:
            raise UsageError(f"stream {stream_id}: write after close")
        try:
            stream.send_credit = consume_credit(stream.send_credit, len(data))
        except ValueError as exc:
            raise UsageError(f"stream {stream_id}: {exc}") from None
        if data:
            stream.push(data)
            self._schedule(stream)

    def give_credit(self, stream_id: int, amount: int) -> None:
        """Let the peer write `amount` more bytes (0: infinitely many)."""
        stream = self._own(stream_id)
        if stream.sent_stop_read:
            raise UsageError(f"stream {stream_id}: credit after stop read")
        stream.recv_credit = self._added(stream.recv_credit, amount)
        self._control.append(encode_head(PacketHead(PacketType.CREDIT, stream_id, amount)))

    def give_global_credit(self, amount: int) -> None:
        """Let the peer create `amount` more streams (0: infinitely many)."""
        self._check_open()
        if self.glob.sent_stop_read:
            raise UsageError("global credit after global stop read")
        self.glob.recv_credit = self._added(self.glob.recv_credit, amount)
        self._control.append(encode_head(PacketHead(PacketType.CREDIT, None, amount)))

    @staticmethod
    def _added(current: int, amount: int) -> int:
        try:
            return add_credit(current, amount)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    def ping(self, stream_id: int | None = None) -> None:
        """Send a ping on a stream, or a global one."""
        if stream_id is None:
            self._check_open()
            if self.glob.sent_close and self.glob.sent_stop_read:
                raise UsageError("global ping after global close and stop read")
        else:
            stream = self._own(stream_id)
            if stream.sent_close and stream.sent_stop_read:
                raise UsageError(f"stream {stream_id}: ping after close and stop read")
        self._control.append(encode_head(PacketHead(PacketType.PING, stream_id)))

    def close(self, stream_id: int) -> None:
        """Write no more to a stream; Close leaves after the queued data."""
        stream = self._own(stream_id)
        if stream.sent_close or stream.close_pending:
            raise UsageError(f"stream {stream_id}: already closed")
        stream.close_pending = True
        self._schedule(stream)

    def stop_read(self, stream_id: int) -> None:
        """Read no more from a stream: StopRead now, later data is dropped."""
        stream = self._own(stream_id)
        if stream.sent_stop_read:
            raise UsageError(f"stream {stream_id}: already stopped reading")
        self._send_stop_read(stream)
        self._maybe_end(stream)

    def close_global(self) -> None:
        """Create no more streams."""
        self._check_open()
        if self.glob.sent_close:
            raise UsageError("global close already sent")
        self.glob.sent_close = True
        self._control.append(encode_head(PacketHead(PacketType.CLOSE, None)))

    def stop_read_global(self) -> None:
        """Give no more global credit."""
        self._check_open()
        if self.glob.sent_stop_read:
            raise UsageError("global stop read already sent")
        self.glob.sent_stop_read = True
        self._control.append(encode_head(PacketHead(PacketType.STOP_READ, None)))

    def _send_stop_read(self, stream: StreamState) -> None:
        stream.sent_stop_read = True
        self._control.append(encode_head(PacketHead(PacketType.STOP_READ, stream.stream_id)))

    def _schedule(self, stream: StreamState) -> None:
        if stream.stream_id not in self._turns:
            self._turns.append(stream.stream_id)

    def _maybe_end(self, stream: StreamState) -> None:
        if not stream.ended:
            return
        self._streams.end(stream.stream_id)
        self._events.append(StreamEnded(stream.stream_id))

    # --------------------------------------------------------------- sending

    def data_to_send(self, limit: int | None = None) -> bytes:
        """Bytes to put on the wire: control packets, then data packets round robin.

        With `limit`, data packets stop once at least `limit` bytes are out
        (control packets always all leave), so a caller can interleave later
        control packets, such as a pong, with bulk data.
        """
        if self._terminated is not None:
            return b""
        out = bytearray(b"".join(self._control))
        self._control.clear()
        while self._turns and (limit is None or len(out) < limit):
            stream = self._streams.get(self._turns.popleft())
            if stream is None or not stream.has_output:
                continue
            if stream.queued:
                head_size = 1 + (1 << width_code(stream.stream_id)) + (1 << width_code(self.max_packet_size))
                data = stream.take(self.max_packet_size - head_size)
                out += encode_head(PacketHead(PacketType.WRITE, stream.stream_id, len(data)))
                out += data
            else:
                stream.close_pending = False
                stream.sent_close = True
                out += encode_head(PacketHead(PacketType.CLOSE, stream.stream_id))
                self._maybe_end(stream)
            if stream.has_output:
                self._turns.append(stream.stream_id)
        return bytes(out)
