"""Fuzz targets: the frame decoders and the engine as seen by a malicious peer, each driven by one byte string.

The same byte string drives hypothesis (tests/fuzz) and atheris (fuzz/,
benchmarks/fuzz_long.py). `run_decoder(data)` feeds the bytes to
`decode_frames` and, in chunks the bytes themselves choose, to a
`FrameReader`. `run_engine(data)` reads the bytes as a program: which side
the engine is, then steps such as "stream data on stream k of kind q: a
well-formed frame built from the next bytes / raw bytes / a cut frame / a
huge declared length", FIN, reset, STOP_SENDING, datagrams, handshake,
clock jumps, and application actions on the handles the engine exposed.
Building frames from choices (rather than hoping raw bytes parse) lets
the fuzzer reach deep engine states.

Allowed outcomes only: normal processing, or a CloseConnection command with
an Aqueduct close code; application calls may raise only AqueductError.
After every step the engine's tables stay within FUZZ_CONFIG's bounds.
Anything else raises `FuzzFinding`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aqueduct.core.app import AttachKind, Delivery, HeadersReceived, MessageAvailable
from aqueduct.core.config import EngineConfig
from aqueduct.core.engine import Engine
from aqueduct.core.transport import (
    CloseConnection,
    DatagramReceived,
    HandshakeCompleted,
    StopSendingReceived,
    StreamDataReceived,
    StreamReset,
    TransportEvent,
)
from aqueduct.errors import AqueductError
from aqueduct.wire.channel_id import ChannelId, Side
from aqueduct.wire.errors import CloseCode, ProtocolError
from aqueduct.wire.frames import (
    AckNackUnreliable,
    AckReliable,
    ChannelControl,
    ClosedChannelLost,
    CloseReceiver,
    ConnectionControl,
    FinishSender,
    Frame,
    FrameType,
    Message,
    SentUnreliable,
    Version,
    encode_frame,
)
from aqueduct.wire.reader import FrameReader, decode_frames
from aqueduct.wire.varint import encode_varint

FUZZ_CONFIG = EngineConfig(
    max_frame_size=4096,
    max_channels=48,
    max_pending_receivers=8,
    max_receiver_queue_messages=16,
    max_receiver_queue_bytes=8192,
    max_buffered_bytes=16384,
    max_datagram_payload=1100,
    discarded_filter_size=32,
)
"""Small limits, so short programs reach them."""

MAX_STEPS = 200
_CLOSE_CODES = frozenset(int(c) for c in CloseCode)


class FuzzFinding(AssertionError):
    """An outcome the engine or decoder must never produce."""


class ByteSource:
    """Reads choices from a byte string; zeros once it runs out."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    @property
    def done(self) -> bool:
        """Whether every byte was used."""
        return self.pos >= len(self.data)

    def byte(self) -> int:
        """The next byte (0 when exhausted)."""
        if self.pos >= len(self.data):
            return 0
        b = self.data[self.pos]
        self.pos += 1
        return b

    def below(self, n: int) -> int:
        """A choice in range(n)."""
        return self.byte() % n if n > 1 else 0

    def flag(self) -> bool:
        """A yes/no choice."""
        return bool(self.byte() & 1)

    def take(self, n: int) -> bytes:
        """Up to `n` next bytes."""
        out = self.data[self.pos : self.pos + n]
        self.pos += len(out)
        return out

    def number(self) -> int:
        """A message number or count: mostly small, sometimes an edge value."""
        kind = self.below(8)
        if kind == 0:
            return (1 << 62) - 1
        if kind == 1:
            return self.byte() << 16 | self.byte() << 8 | self.byte()
        return self.below(24)


# ---- decoder ----


def run_decoder(data: bytes) -> int:
    """Decode `data` whole and in chunks; return frames decoded. Only ProtocolError may escape (as a result)."""
    whole: list[Frame] | None
    try:
        whole = decode_frames(data, FUZZ_CONFIG.max_frame_size)
    except ProtocolError as err:
        _check_code(err)
        whole = None
    reader = FrameReader(FUZZ_CONFIG.max_frame_size)
    chunked: list[Frame] = []
    pos, step = 0, 1
    try:
        while pos < len(data):
            step = (data[pos] % 7) + 1
            chunked.extend(reader.feed(data[pos : pos + step]))
            if reader.buffered > FUZZ_CONFIG.max_frame_size + 16:
                raise FuzzFinding(f"reader holds {reader.buffered} bytes, over the frame limit")
            pos += step
        reader.finish()
    except ProtocolError as err:
        _check_code(err)
        if whole is not None:
            raise FuzzFinding(f"chunked decoding failed ({err}) where whole decoding passed") from err
        return len(chunked)
    if whole is None:
        raise FuzzFinding("chunked decoding passed where whole decoding failed")
    if chunked != whole:
        raise FuzzFinding("chunked decoding differs from whole decoding")
    return len(whole)


def _check_code(err: ProtocolError) -> None:
    if int(err.code) not in _CLOSE_CODES:
        raise FuzzFinding(f"ProtocolError with unknown code {err.code}")


# ---- engine ----


def _channel(src: ByteSource, side: Side) -> int:
    """A channel ID: the entrypoint, one the peer may legally mint towards `side`, or any."""
    kind = src.below(6)
    if kind == 0:
        return 0  # the entrypoint
    if kind <= 3:
        return ChannelId.make(to=side, minted_by=side.other, oneshot=src.flag(), index=src.below(12))
    index = src.below(6) if src.flag() else (1 << 61) - 1 - src.below(2)
    return ChannelId.make(to=Side(src.below(2)), minted_by=Side(src.below(2)), oneshot=src.flag(), index=index)


def _ranges(src: ByteSource) -> tuple[int, ...]:
    out = []
    for _ in range(src.below(5)):
        v = src.below(9) - 4
        out.append(v if src.below(8) else src.number())
    return tuple(out)


def _frame(src: ByteSource, side: Side) -> bytes:
    kind = src.below(10)
    frame: Frame
    if kind == 0:
        frame = Version() if src.below(4) else Version(version=src.take(src.below(6)).hex())
    elif kind == 1:
        frame = ConnectionControl(tuple((f"h{i}", src.take(src.below(8))) for i in range(src.below(3))))
    elif kind == 2:
        frame = ChannelControl(_channel(src, side))
    elif kind == 3:
        attachments = tuple(_channel(src, side) for _ in range(src.below(3)))
        frame = Message(_channel(src, side), src.number(), attachments, src.take(src.below(48)))
    elif kind == 4:
        frame = SentUnreliable(src.number())
    elif kind == 5:
        frame = AckReliable(_ranges(src))
    elif kind == 6:
        frame = AckNackUnreliable(_ranges(src))
    elif kind == 7:
        frame = FinishSender(src.number())
    elif kind == 8:
        frame = CloseReceiver(_ranges(src))
    else:
        frame = ClosedChannelLost(_channel(src, side))
    try:
        return encode_frame(frame)
    except (ProtocolError, ValueError, OverflowError):
        return bytes([int(FrameType.MESSAGE)]) + src.take(4)


def _huge_message(src: ByteSource, side: Side) -> bytes:
    """A Message header declaring a payload far over every limit, followed by a few bytes."""
    declared = (1 << (20 + src.below(40))) + src.below(255)
    head = bytes([int(FrameType.MESSAGE)]) + encode_varint(_channel(src, side)) + encode_varint(0) + encode_varint(0)
    return head + encode_varint(declared) + src.take(src.below(32))


def _payload(src: ByteSource, side: Side) -> bytes:
    mode = src.below(8)
    if mode == 0:
        return src.take(src.below(64))  # raw bytes
    if mode == 1:
        return _huge_message(src, side)
    data = b"".join(_frame(src, side) for _ in range(1 + src.below(3)))
    if src.below(4) == 0:
        data = encode_frame(Version()) + data
    if mode == 2:
        return data[: src.below(len(data) + 1)]  # a cut frame
    return data


def _stream_id(src: ByteSource) -> int:
    return src.below(12) * 4 + src.below(4)


@dataclass
class EngineRun:
    """What one program did."""

    steps: int = 0
    closed_code: int | None = None
    app_errors: int = 0
    max_sizes: dict[str, int] = field(default_factory=dict)


class _Program:
    def __init__(self, data: bytes) -> None:
        self.src = ByteSource(data)
        self.side = Side.SERVER if self.src.below(4) else Side.CLIENT
        self.engine = Engine(self.side, config=FUZZ_CONFIG, now=0.0)
        self.now = 0.0
        self.receivers: list[int] = []
        self.senders: list[int] = []
        self.run = EngineRun()
        self.flood_streams = 0
        ep = self.engine.entrypoint
        if ep is not None:
            self.senders.append(ep)

    def start(self) -> None:
        """Usually begin as a well-behaved peer would, so the fuzzer spends its bytes past the start-up gates."""
        if self.src.below(4) == 0:
            return
        self.feed(HandshakeCompleted())
        if self.side is Side.SERVER:
            self.feed(StreamDataReceived(0, encode_frame(Version()) + encode_frame(ConnectionControl())))
        else:
            self.feed(StreamDataReceived(0, encode_frame(Version()) + encode_frame(ConnectionControl())))

    def feed(self, ev: TransportEvent) -> None:
        try:
            self.engine.handle_event(ev, self.now)
        except Exception as exc:
            raise FuzzFinding(f"{type(exc).__name__} escaped handle_event({ev!r:.200}): {exc}") from exc
        self.after()

    def step(self) -> None:
        src = self.src
        op = src.below(17)
        if op <= 6:
            self.feed(StreamDataReceived(_stream_id(src), _payload(src, self.side), end_stream=src.below(5) == 0))
        elif op == 7:
            self.feed(StreamDataReceived(_stream_id(src), b"", end_stream=True))
        elif op == 8:
            self.feed(StreamReset(_stream_id(src), src.below(4)))
        elif op == 9:
            self.feed(StopSendingReceived(_stream_id(src), src.below(4)))
        elif op == 10:
            self.feed(DatagramReceived(_payload(src, self.side)))
        elif op == 11:
            self.feed(HandshakeCompleted(early_data_accepted=src.flag()))
        elif op == 12:
            self.now += (0.001, 0.06, 0.3, 2.5)[src.below(4)]
            try:
                self.engine.handle_timer(self.now)
            except Exception as exc:
                raise FuzzFinding(f"{type(exc).__name__} escaped handle_timer: {exc}") from exc
            self.after()
        elif op <= 15:
            self.app(op - 13)
        else:
            self.flood()

    def flood(self) -> None:
        """Messages for many never-created channels, each on a new stream (auto-created receivers pile up)."""
        src = self.src
        base = 64 + src.below(64) * 64
        for i in range(1 + src.below(48)):
            cid = ChannelId.make(to=self.side, minted_by=self.side.other, oneshot=False, index=base + i)
            sid = (16 + self.flood_streams) * 4 + (2 if self.side is Side.SERVER else 3)
            self.flood_streams += 1
            self.feed(StreamDataReceived(sid, encode_frame(Message(cid, 0, (), b"x" * src.below(64)))))
            if self.engine.closed:
                return

    def app(self, which: int) -> None:
        """An application action on an exposed handle; misuse may raise only AqueductError."""
        e, src = self.engine, self.src
        try:
            if which == 0 and self.receivers:
                r = self.receivers[src.below(len(self.receivers))]
                for _ in range(1 + src.below(4)):
                    d = e.take_message(r, now=self.now)
                    if d is None:
                        break
                    for a in d.attachments:
                        (self.senders if a.is_sender else self.receivers).append(a.handle)
            elif which == 1 and self.senders:
                s = self.senders[src.below(len(self.senders))]
                kinds = [list(AttachKind)[src.below(4)] for _ in range(src.below(3))]
                delivery = list(Delivery)[src.below(3)]
                result = e.send(s, src.take(src.below(32)), kinds, delivery if not kinds else Delivery.ORDERED,
                                now=self.now)
                for kind, h in zip(kinds, result.created, strict=True):
                    (self.receivers if kind.gives_sender else self.senders).append(h)
            elif which == 2:
                pool = self.senders + self.receivers
                if pool:
                    h = pool[src.below(len(pool))]
                    action = src.below(5)
                    if h in self.senders:
                        (e.finish, e.cancel, e.drop_sender, e.finish, e.cancel)[action](h, now=self.now)
                    else:
                        (e.close_receiver, e.drop_receiver, e.close_receiver, e.drop_receiver,
                         e.close_receiver)[action](h, now=self.now)
        except AqueductError:
            self.run.app_errors += 1
        except Exception as exc:
            raise FuzzFinding(f"application call raised {type(exc).__name__}: {exc}") from exc
        self.after()

    def after(self) -> None:
        """Drain outputs and check every rule and bound."""
        e = self.engine
        for cmd in e.commands():
            if isinstance(cmd, CloseConnection):
                if cmd.error_code not in _CLOSE_CODES:
                    raise FuzzFinding(f"closed with unknown code {cmd.error_code}: {cmd.reason}")
                if self.run.closed_code is not None:
                    raise FuzzFinding("CloseConnection issued twice")
                self.run.closed_code = cmd.error_code
        for ev in e.events():
            if isinstance(ev, HeadersReceived) and ev.entrypoint is not None:
                self.receivers.append(ev.entrypoint)
            elif isinstance(ev, MessageAvailable) and ev.receiver not in self.receivers:
                raise FuzzFinding(f"MessageAvailable for a handle never exposed: {ev.receiver}")
        if e.closed:
            return
        self._check_bounds()

    def _check_bounds(self) -> None:
        e, cfg = self.engine, FUZZ_CONFIG
        sizes = e.state_sizes()
        for k, v in sizes.items():
            self.run.max_sizes[k] = max(self.run.max_sizes.get(k, 0), v)
        problems = []
        if sizes["pending_receivers"] > cfg.max_pending_receivers:
            problems.append(f"pending_receivers {sizes['pending_receivers']} > {cfg.max_pending_receivers}")
        if sizes["held_bytes"] > cfg.max_buffered_bytes:
            problems.append(f"held_bytes {sizes['held_bytes']} > {cfg.max_buffered_bytes}")
        # Handles the application holds count too; a few app-held, ended halves may outlive the limit's check.
        if sizes["senders"] + sizes["receivers"] > cfg.max_channels + 2:
            problems.append(f"senders+receivers {sizes['senders'] + sizes['receivers']} > {cfg.max_channels}")
        for r in e._receivers.values():
            if len(r.queue or ()) > cfg.max_receiver_queue_messages or r.queue_bytes > cfg.max_receiver_queue_bytes:
                problems.append(f"receiver {r.handle} queues {len(r.queue or ())} messages / {r.queue_bytes} bytes")
        if problems:
            raise FuzzFinding("bound exceeded: " + "; ".join(problems))


def run_engine(data: bytes) -> EngineRun:
    """Run one engine program; raise FuzzFinding on any outcome other than processing or a coded close."""
    prog = _Program(data)
    prog.start()
    while not prog.src.done and prog.run.steps < MAX_STEPS and not prog.engine.closed:
        prog.step()
        prog.run.steps += 1
    return prog.run
