"""A receiver's application queue: processed messages waiting to be taken, bounded by count and bytes.

Spec: "The message must be conveyed to the local application. This may be
done by enqueueing it to an application-facing queue." Each entry is kept
as the Delivered the application will get, with the stream whose flow
control credit it holds and how much (credit returns when the entry is
taken or discarded: a receiver that does not read closes its peer's
window). The queue counts its payload bytes plus `overhead` per message
(EngineConfig.held_item_overhead: empty messages are not free); `max_messages`
and `max_bytes` (EngineConfig.max_receiver_queue_*) bound it. Every change of the count of
bytes happens here: callers add with `offer`/`put`/`put_run` and remove
with `take`/`take_many`, and so every change of the count of halves the queued messages carry (`halves`:
only `put` queues a message with attachments).

A receiver allocates its queue with its first message (an idle channel
holds none). The queue is a deque, so the per-message calls on the hot
paths (`offer`, `len`, truth) cost one call or none.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from .app import Delivered

Queued = tuple[Delivered, int | None, int]
"""A processed message waiting for the application: as the application will get it, the stream whose credit
it holds (None: a datagram), and that credit. (A tuple: one is made per message.)"""


class MessageQueue(deque[Queued]):
    """Messages waiting for the application, with their payload bytes counted against two bounds."""

    __slots__ = ("halves", "max_bytes", "max_messages", "nbytes", "overhead")

    def __init__(self, max_messages: int, max_bytes: int, overhead: int = 0) -> None:
        super().__init__()
        self.nbytes = 0
        """Payload bytes queued, plus `overhead` per message."""
        self.halves = 0
        """Halves the queued messages carry (each holds a channel's engine state: Intake bounds them)."""
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.overhead = overhead

    def has_room(self, count: int, nbytes: int) -> bool:
        """Whether `count` more messages of `nbytes` payload bytes in all fit."""
        return (len(self) + count <= self.max_messages
                and self.nbytes + nbytes + count * self.overhead <= self.max_bytes)

    def offer(self, item: Queued, nbytes: int) -> bool:
        """Queue `item` (`nbytes` payload bytes) if it fits; whether it did (nothing changes if not)."""
        nbytes += self.overhead
        if len(self) >= self.max_messages or self.nbytes + nbytes > self.max_bytes:
            return False
        self.append(item)
        self.nbytes += nbytes
        return True

    def put(self, item: Queued, nbytes: int) -> None:
        """Queue `item` whose room `has_room` confirmed."""
        self.append(item)
        self.nbytes += nbytes + self.overhead
        if item[0].attachments:
            self.halves += len(item[0].attachments)

    def put_run(self, items: Iterable[Queued], nbytes: int, count: int) -> None:
        """Queue a run of `count` items (`nbytes` payload bytes in all) whose room `fitting` or `has_room`
        confirmed."""
        self.extend(items)
        self.nbytes += nbytes + count * self.overhead

    def fitting(self, payloads: list[bytes]) -> tuple[int, int]:
        """How many of `payloads`, in order, fit, and their payload bytes."""
        k = min(len(payloads), self.max_messages - len(self))
        room = self.max_bytes - self.nbytes
        nbytes = 0
        overhead = self.overhead
        for i in range(max(k, 0)):
            if nbytes + len(payloads[i]) + (i + 1) * overhead > room:
                return i, nbytes
            nbytes += len(payloads[i])
        return max(k, 0), nbytes

    def take(self) -> Queued:
        """Remove and return the oldest entry (the queue must not be empty)."""
        item = self.popleft()
        self.nbytes -= len(item[0].payload) + self.overhead
        if self.halves:
            self.halves -= len(item[0].attachments)
        return item

    def take_many(self, limit: int) -> list[Queued]:
        """Remove and return up to `limit` entries, oldest first."""
        pop = self.popleft
        items = [pop() for _ in range(min(limit, len(self)))]
        self.nbytes -= sum([len(d.payload) for d, _, _ in items]) + len(items) * self.overhead
        if self.halves:
            self.halves -= sum([len(d.attachments) for d, _, _ in items])
        return items
