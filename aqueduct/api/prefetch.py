"""Prefetching: a networked receiver takes a bounded batch of queued messages at once, decoded, into its own deque.

`take` moves the next batch of a receiver's queued messages out of the
engine (`Engine.take_many`, at most PREFETCH_MESSAGES, and after a message
of n bytes at most max(1, PREFETCH_BYTES // n): large messages come one by
one) into the deque its Receiver reads (halves/receiver.py), so most receives are a
popleft. Each message is decoded now, the halves it carries are bound to
new networked halves, and a typed receiver's check (is it a T?) runs on it
now too. A message refused (the codec's error, or not a T) keeps its turn:
its error is raised when the application reaches it, and the rest of its
batch follows only if the application reads on. The engine owes a reliable
message's ack when it is taken (EngineConfig.ack_on_take, set by the API),
so a message taken here is acked even if its receiver closes before `recv`
reaches it (a batch at most); a refused message and the rest of its batch
are given back at once (`Engine.refuse`, in the same step as the take: no
ack of theirs was written), so the receiver's close nacks them (a
confirmed send of a refused value reports NACKED); reading on past the
refusal acks them (`Engine.accept_refused`): decision API-34. Credit goes
back as messages leave the engine, as before; what a receiver holds is
discarded like the engine's queue (`forget`: on close, on a cancel or
loss, when the connection ends).

Prefetch owns the buffers, the batch sizes and the undecoded rests; the
link (link.py) owns when a receiver waits. It is given what it uses when
made (the adapter, whose engine it takes from, the codec, the counters,
the Link new halves talk through) and each take's recording hook, so it
never reaches back into the link.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from ..core import app
from ..core.app import Delivery
from ..errors import ValidationError
from ..wire.channel_id import ChannelId
from .adapter import Adapter
from .codec import Codec
from .halves import Half, LagNotice, Link, Prefetched
from .halves.base import Check
from .halves.wiring import discard_halves, networked_half
from .hooks import Recording
from .stats import Stats

PREFETCH_MESSAGES = 64
"""A networked receiver takes at most this many queued messages from the engine at once."""
PREFETCH_BYTES = 64 * 1024
"""After a message of n bytes it takes at most max(1, PREFETCH_BYTES // n): large messages come one by one."""

_ORDERED = Delivery.ORDERED


def _a_channel() -> str:
    return "a channel"


class Prefetch:
    """The prefetch buffers of one connection's networked receivers."""

    __slots__ = ("_adapter", "_bufs", "_codec", "_link", "_loop_time", "_sizes", "_stats", "_undecoded")

    def __init__(self, link: Link, adapter: Adapter, codec: Codec, stats: Stats,
                 loop_time: Callable[[], float]) -> None:
        self._link = link
        """What the halves a message carries talk through."""
        self._adapter, self._codec, self._stats = adapter, codec, stats
        self._loop_time = loop_time
        self._bufs: dict[int, deque[Prefetched]] = {}
        """Receiver handle -> the buffer its Receiver prefetches into (cleared when the engine would discard)."""
        self._sizes: dict[int, int] = {}
        """Receiver handle -> how many messages its next take may hold."""
        self._undecoded: dict[int, tuple[Exception | None, Sequence[app.Delivered]]] = {}
        """Receiver handle -> a refused message's error (None once raised) and the messages taken after it."""

    def handles(self) -> list[int]:
        """The receivers with a buffer."""
        return list(self._bufs)

    def forget(self, handle: int, *, discard: bool) -> None:
        """The receiver ended: stop tracking its prefetch buffer; `discard` empties it, as the engine its queue."""
        buf = self._bufs.pop(handle, None)
        self._sizes.pop(handle, None)
        if discard:
            self._undecoded.pop(handle, None)
            if buf is not None:
                buf.clear()

    def take(self, handle: int, buf: deque[Prefetched], recording: Recording | None,
             check: Check | None = None, where: Callable[[], str] | None = None) -> bool:
        """Take a batch into `buf` (telling `recording` of each message, `check`ing each value on the channel
        `where` names); False if the engine had none. Raises a decode error or a refusal in its message's turn."""
        adapter = self._adapter
        engine = adapter.engine
        assert engine is not None
        failed = self._undecoded.pop(handle, None)
        if failed is not None:
            exc, rest = failed
            if exc is not None:  # a refused message's turn: its error now (the rest waits: `exc` may end the reader)
                self._undecoded[handle] = (None, rest)
                raise exc
            # the application reads on past it: acked after all (the wire cannot nack one and keep the channel)
            engine.accept_refused(handle, self._loop_time())
            adapter.flush_soon()
            self._decode_into(handle, rest, buf, recording, check, where)
            if buf or handle in self._undecoded:
                return True if buf else self.take(handle, buf, recording, check, where)
        taken = engine.take_many(handle, self._sizes.get(handle, PREFETCH_MESSAGES), self._loop_time())
        if not taken:
            return False
        adapter.flush_soon()  # (a take writes only credit and acks: they can wait for the turn's end)
        self._bufs[handle] = buf
        self._decode_into(handle, taken, buf, recording, check, where)
        return True if buf else self.take(handle, buf, recording, check, where)  # (the first was refused: its error)

    def _decode_into(self, handle: int, taken: Sequence[app.Delivered], buf: deque[Prefetched],
                     recording: Recording | None, check: Check | None, where: Callable[[], str] | None) -> None:
        """Decode (and check) `taken` into `buf`, up to a message refused: that one's error and the rest wait in
        `_undecoded`, and the engine is told at once, before any ack of theirs is written (Engine.refuse)."""
        link, decode, stats = self._link, self._codec.decode, self._stats
        convert = None if check is None else check.convert
        named = where or _a_channel
        nbytes = biggest = 0
        append = buf.append
        for i, d in enumerate(taken):
            payload, attachments = d.payload, d.attachments
            size = len(payload)
            nbytes += size
            if size > biggest:
                biggest = size
            halves: Sequence[Half] = (
                [networked_half(link, a.handle, is_sender=a.is_sender, oneshot=ChannelId(a.channel).oneshot)
                 for a in attachments]
                if attachments
                else ()
            )
            if recording is not None:
                recording.on_received(d)
            if d.delivery is not _ORDERED:
                stats.count_received_apart(d.delivery, size)
            try:
                value = decode(payload, halves)
            except Exception as exc:  # the codec refused it: the application gets the error in this message's turn
                discard_halves(halves)  # (the halves it carried end now, not when the error is collected)
                self._refused(handle, exc, taken, i)
                stats.messages_received += i + 1
                stats.bytes_received += nbytes
                return
            if convert is not None and type(value) is not LagNotice:
                try:
                    value = convert(value, named)
                except ValidationError as exc:  # not a T: refused (its halves end now, not when collected)
                    discard_halves(halves)
                    self._refused(handle, exc, taken, i)
                    stats.messages_received += i + 1
                    stats.bytes_received += nbytes
                    return
            append((value, d.delivery, d.number))
        stats.messages_received += len(taken)
        stats.bytes_received += nbytes
        self._sizes[handle] = max(1, min(PREFETCH_MESSAGES, PREFETCH_BYTES // max(1, biggest)))

    def _refused(self, handle: int, exc: Exception, taken: Sequence[app.Delivered], i: int) -> None:
        """Message `i` of `taken` was refused: its error comes in its turn, the rest after it; the engine owes
        none of their acks (a close nacks them) until the application reads on (`take`: accept_refused)."""
        self._undecoded[handle] = (exc, taken[i + 1 :])
        engine = self._adapter.engine
        assert engine is not None
        engine.refuse(handle, taken[i:], self._loop_time())
