"""The simulated QUIC streams: ordered bytes per stream direction, receive windows, stream limits, resets.

Each direction of a stream is a StreamPipe (pipe.py) keyed by (sender side,
stream id). A write is scheduled to arrive a one-way delay later (held for
the handshake unless 0-RTT is accepted); `flush_at` delivers what the
window and the clock allow as StreamDataReceived chunks (split at random
with `split_chunks`), then the FIN or the reset. A reset keeps a random
part of the undelivered bytes (a FIN may win the race). StopSending makes
the peer's stack reset its direction with the same code, as aioquic does.
GrantCredit opens the window a one-way delay later; credit beyond the bytes
delivered is recorded as `overcredit`. With `max_streams`, a side may open
streams up to the limit, and one more each time one of its streams has
ended both ways; what it writes beyond waits. Misuse (a write after FIN, on
a receive-only or unknown stream) is recorded, never raised.

SimStreams owns the pipes and the limits; the simulation (sim.py) owns the
clock, the randomness and the delivery to engines, which it lends through
StreamHost.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

from ..core.transport import (
    GrantCredit,
    ResetStream,
    SendStreamData,
    StopSending,
    StopSendingReceived,
    StreamDataReceived,
    StreamReset,
    TransportEvent,
    is_bidi,
    is_client_initiated,
)
from ..wire.channel_id import Side
from .endpoint import Endpoint
from .netconfig import NetConfig
from .pipe import StreamPipe


class StreamHost(Protocol):
    """What the streams need of the simulation (sim.py's Simulation is one)."""

    now: float
    net: NetConfig
    rng: random.Random
    stats: Counter[str]
    misuse: list[str]
    overcredit: list[str]

    def endpoint(self, side: Side) -> Endpoint[Any]:
        """The endpoint of a side."""

    def _at(self, t: float, action: Callable[[], None]) -> None: ...
    def _delay(self) -> float: ...
    def _departure(self, side: Side) -> float: ...
    def _arrival_floor(self, side: Side) -> float: ...
    def _deliver(self, ep: Endpoint[Any], event: TransportEvent) -> None: ...


class SimStreams:
    """Every stream direction of one simulated connection."""

    def __init__(self, host: StreamHost) -> None:
        self._host = host
        self.pipes: dict[tuple[Side, int], StreamPipe] = {}
        limit = host.net.max_streams
        self._stream_limit: dict[tuple[Side, bool], int | None] = {
            (side, bidi): limit for side in (Side.CLIENT, Side.SERVER) for bidi in (True, False)
        }
        self._closed_streams: set[int] = set()
        self._granted: Counter[tuple[Side, int]] = Counter()

    def may_send_on(self, ep: Endpoint[Any], stream_id: int, what: str) -> bool:
        mine = is_client_initiated(stream_id) == (ep.side is Side.CLIENT)
        if not mine and not is_bidi(stream_id):
            self._host.misuse.append(f"{ep.side.name}: {what} on receive-only stream {stream_id}")
            return False
        if not mine and (ep.side.other, stream_id) not in self.pipes:
            self._host.misuse.append(f"{ep.side.name}: {what} on peer stream {stream_id} the peer never opened")
            return False
        return True

    def pipe(self, side: Side, stream_id: int) -> StreamPipe:
        key = (side, stream_id)
        pipe = self.pipes.get(key)
        if pipe is None:
            pipe = self.pipes[key] = StreamPipe(stream_id, self._host.net.stream_window)
            limit = self._stream_limit[(side, is_bidi(stream_id))]
            pipe.blocked = self._opener(stream_id) is side and limit is not None and stream_id >> 2 >= limit
            self._host.stats["streams_blocked"] += pipe.blocked
        return pipe

    @staticmethod
    def _opener(stream_id: int) -> Side:
        return Side.CLIENT if is_client_initiated(stream_id) else Side.SERVER

    def _maybe_closed(self, stream_id: int) -> None:
        """Once both directions of a stream ended, the peer lets its opener open one more (after a one-way delay)."""
        opener = self._opener(stream_id)
        mine = self.pipes.get((opener, stream_id))
        theirs = self.pipes.get((opener.other, stream_id))
        if stream_id in self._closed_streams or mine is None or not mine.done:
            return
        if is_bidi(stream_id) and (theirs is None or not theirs.done):
            return
        self._closed_streams.add(stream_id)
        key = (opener, is_bidi(stream_id))
        if self._stream_limit[key] is None:
            return

        def raise_limit() -> None:
            new = self._stream_limit[key] = (self._stream_limit[key] or 0) + 1
            for (side, sid), pipe in self.pipes.items():
                if side is opener and is_bidi(sid) == key[1] and pipe.blocked and sid >> 2 < new:
                    pipe.blocked = False
                    self.flush_at(side, pipe, self._host.now)

        self._host._at(self._host.now + self._host._delay(), raise_limit)

    def send(self, ep: Endpoint[Any], cmd: SendStreamData) -> None:
        if not self.may_send_on(ep, cmd.stream_id, "write"):
            return
        pipe = self.pipe(ep.side, cmd.stream_id)
        if pipe.closed_for_writing:
            self._host.misuse.append(f"{ep.side.name}: write on stream {cmd.stream_id} after FIN or reset")
            return
        if not cmd.data and not cmd.end_stream:
            return
        ready = max(self._host._departure(ep.side) + self._host._delay(), self._host._arrival_floor(ep.side))
        ready = pipe.write(cmd.data, ready, cmd.end_stream)
        self._host.stats["stream_bytes_sent"] += len(cmd.data)
        self.flush_at(ep.side, pipe, ready)

    def reset(self, ep: Endpoint[Any], cmd: ResetStream) -> None:
        if not self.may_send_on(ep, cmd.stream_id, "reset"):
            return
        pipe = self.pipe(ep.side, cmd.stream_id)
        if pipe.reset_code is not None or pipe.fin_delivered:
            return  # QUIC ignores a second reset, and a reset after the peer has everything
        self._reset_pipe(ep.side, pipe, cmd.error_code)

    def _reset_pipe(self, side: Side, pipe: StreamPipe, code: int) -> None:
        undelivered, rng = pipe.undelivered, self._host.rng
        keep = undelivered if rng.random() < self._host.net.reset_keep else rng.randint(0, undelivered)
        if keep == undelivered and pipe.fin_written and rng.random() < 0.5:
            return  # the FIN won the race: the peer sees a clean end and never the reset
        ready = max(self._host._departure(side) + self._host._delay(), self._host._arrival_floor(side))
        ready = pipe.reset(code, ready, keep)
        self._host.stats["resets"] += 1
        self._host.stats[f"resets_code_{code}"] += 1
        self.flush_at(side, pipe, ready)

    def stop_sending(self, ep: Endpoint[Any], cmd: StopSending) -> None:
        peer = self._host.endpoint(ep.side.other)
        ours = is_client_initiated(cmd.stream_id) == (ep.side is Side.CLIENT)
        if ours and not is_bidi(cmd.stream_id):
            self._host.misuse.append(f"{ep.side.name}: stop sending on send-only stream {cmd.stream_id}")
            return
        ready = max(self._host._departure(ep.side) + self._host._delay(), self._host._arrival_floor(ep.side))

        def arrive() -> None:
            pipe = self.pipe(peer.side, cmd.stream_id)
            if pipe.done:
                return
            if not pipe.closed_for_writing:  # like aioquic: the peer's stack resets the stream with the same code
                self._reset_pipe(peer.side, pipe, cmd.error_code)
            self._host._deliver(peer, StopSendingReceived(cmd.stream_id, cmd.error_code))

        self._host._at(ready, arrive)

    def grant_credit(self, ep: Endpoint[Any], cmd: GrantCredit) -> None:
        if cmd.nbytes <= 0:
            self._host.misuse.append(f"{ep.side.name}: GrantCredit of {cmd.nbytes} on stream {cmd.stream_id}")
            return
        sender = ep.side.other
        key = (sender, cmd.stream_id)
        self._granted[key] += cmd.nbytes
        received = self.pipes[key].delivered if key in self.pipes else 0
        if self._granted[key] > received:  # credit is for consumed bytes: more than arrived overruns the window
            self._host.overcredit.append(
                f"{ep.side.name}: GrantCredit total {self._granted[key]} on stream {cmd.stream_id}, "
                f"only {received} bytes received"
            )
        if self._host.net.stream_window is None:
            return
        pipe = self.pipe(sender, cmd.stream_id)

        def arrive() -> None:
            assert pipe.limit is not None
            pipe.limit += cmd.nbytes
            self.flush_at(sender, pipe, self._host.now)

        self._host._at(self._host.now + self._host._delay(), arrive)

    def flush_at(self, sender: Side, pipe: StreamPipe, t: float) -> None:
        self._host._at(max(t, self._host.now), lambda: self._flush(sender, pipe))

    def _flush(self, sender: Side, pipe: StreamPipe) -> None:
        receiver = self._host.endpoint(sender.other)
        n = pipe.deliverable(self._host.now)
        if n:
            if self._host.net.split_chunks and self._host.rng.random() < 0.6:
                n = self._host.rng.randint(1, n)
            data = pipe.take(n)
            fin = pipe.reset_code is None and pipe.end_due(self._host.now)
            if fin:
                pipe.fin_delivered = True
            self._host.stats["stream_chunks"] += 1
            self._host.stats["stream_bytes_delivered"] += n
            self._host._deliver(receiver, StreamDataReceived(pipe.stream_id, data, end_stream=fin))
        elif pipe.end_due(self._host.now):
            if pipe.reset_code is not None:
                pipe.reset_delivered = True
                self._host._deliver(receiver, StreamReset(pipe.stream_id, pipe.reset_code))
            else:
                pipe.fin_delivered = True
                self._host._deliver(receiver, StreamDataReceived(pipe.stream_id, b"", end_stream=True))
        else:
            return  # nothing due: a later write, credit, release or stream limit schedules the next flush
        if pipe.done:
            self._maybe_closed(pipe.stream_id)
        if not pipe.done and (pipe.deliverable(self._host.now) or pipe.end_due(self._host.now)):
            self.flush_at(sender, pipe, self._host.now + self._host.rng.uniform(0.0, self._host.net.chunk_gap))
