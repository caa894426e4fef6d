"""Prefetching: a networked receiver takes a bounded batch of queued messages at once, decoded, into its own deque.

`take` moves the next batch of a receiver's queued messages out of the
engine (`Engine.take_many`, at most PREFETCH_MESSAGES, and after a message
of n bytes at most max(1, PREFETCH_BYTES // n): large messages come one by
one) into the deque its Receiver reads (halves/receiver.py), so most receives are a
popleft. Each message is decoded now and the halves it carries are bound to
new networked halves; a message the codec refuses keeps its turn: its
error is raised when the application reaches it, and the rest of its batch
follows. Credit goes back as messages leave the engine, as before; what a
receiver holds is discarded like the engine's queue (`forget`: on close,
on a cancel or loss, when the connection ends).

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
from ..wire.channel_id import ChannelId
from .adapter import Adapter
from .codec import Codec
from .halves import Half, Link, Prefetched
from .halves.wiring import networked_half
from .hooks import Recording
from .stats import Stats

PREFETCH_MESSAGES = 64
"""A networked receiver takes at most this many queued messages from the engine at once."""
PREFETCH_BYTES = 64 * 1024
"""After a message of n bytes it takes at most max(1, PREFETCH_BYTES // n): large messages come one by one."""

_ORDERED = Delivery.ORDERED


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
        self._undecoded: dict[int, tuple[Exception, Sequence[app.Delivered]]] = {}

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

    def take(self, handle: int, buf: deque[Prefetched], recording: Recording | None) -> bool:
        """Take a batch into `buf` (telling `recording` of each message); False if the engine had none. Raises a
        decode error in its message's turn."""
        failed = self._undecoded.pop(handle, None)
        if failed is not None:  # a message of the last batch did not decode: its error comes now, then the rest
            exc, rest = failed
            self._decode_into(handle, rest, buf, recording)
            raise exc
        adapter = self._adapter
        engine = adapter.engine
        assert engine is not None
        taken = engine.take_many(handle, self._sizes.get(handle, PREFETCH_MESSAGES), self._loop_time())
        if not taken:
            return False
        adapter.flush_soon()  # (a take writes only credit and acks: they can wait for the turn's end)
        self._bufs[handle] = buf
        self._decode_into(handle, taken, buf, recording)
        return True if buf else self.take(handle, buf, recording)  # (the first one failed: raise its error)

    def _decode_into(self, handle: int, taken: Sequence[app.Delivered], buf: deque[Prefetched],
                     recording: Recording | None) -> None:
        link, decode, stats = self._link, self._codec.decode, self._stats
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
                append((decode(payload, halves), d.delivery, d.number))
            except Exception as exc:  # the codec refused it: the application gets the error in this message's turn
                self._undecoded[handle] = (exc, taken[i + 1 :])
                stats.messages_received += i + 1
                stats.bytes_received += nbytes
                return
        stats.messages_received += len(taken)
        stats.bytes_received += nbytes
        self._sizes[handle] = max(1, min(PREFETCH_MESSAGES, PREFETCH_BYTES // max(1, biggest)))
