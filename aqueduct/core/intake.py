"""Receiving a Message (spec: "Message" processing on the receiver side, "ghost receivers", attachments).

Routing: to the live receiver of its channel; else, for a channel the peer
minted, to a new auto-created ("unclaimed") receiver (unless the channel is
in a ghost filter, halves.py), which opens its control stream at once; else
(a channel we minted) the message is dropped. Processing it checks it
against the ledger (a duplicate, a number beyond FinishSender, a second
message on a oneshot channel are protocol errors; an unreliable number
already nacked is dropped), creates or claims the halves it attaches,
queues it for the application and marks it owed an ack (with
EngineConfig.ack_on_take a reliable one only processed: receiving.py owes
its ack when the application takes it); the ack timer is rescheduled only
when that may move it.

Backpressure: a reliable message that finds its queue full raises
QueueFull before changing anything; incoming.py stalls its stream (flow.py).
An unreliable one is dropped and will be nacked like a lost datagram.

One way in: `receive` takes a batch, messages of one channel with
consecutive numbers (a chunk's run of plain Messages on a stream, or one
Message of a stream or datagram). While the batch's front meets the fast
conditions (its receiver open, the next number in order, nothing attached,
room queued) it is queued at once, its ledger and ack timer touched once
for the batch (`_queue_next`, `_queue_unreliable` for a datagram); any
other message goes through `_process`, the general procedure, alone. The
fast conditions do exactly what `_process` would (tests/core/
test_hot_paths.py holds an engine whose batches all take `_process` as
the oracle). Every message is queued through the receiver's one
MessageQueue (queue.py), which keeps it as the Delivered the application
will get, with its credit.

This module writes what arrives (a receiver's queue, `messages_seen`, its
ledger through the ledger's methods); receiving.py owns the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

from ..wire.channel_id import ENTRYPOINT, ChannelId
from ..wire.errors import CloseCode, ProtocolError
from ..wire.ranges import MAX_RANGE_END
from .app import Attachment, Delivered, Delivery, MessageAvailable
from .context import Context
from .halves import Halves
from .queue import MessageQueue
from .receiver import RState
from .receiving import Receivers
from .sending import Senders
from .timers import ACKS

_ROPEN = RState.OPEN
_ORDERED = Delivery.ORDERED
_UNRELIABLE = Delivery.UNRELIABLE


class QueueFull(Exception):
    """Internal: a reliable message found its receiver's queue full; its stream waits."""

    def __init__(self, receiver: int) -> None:
        super().__init__(receiver)
        self.receiver = receiver


class Intake:
    """Messages in, queued for the application."""

    def __init__(self, ctx: Context, halves: Halves, rx: Receivers, tx: Senders) -> None:
        self._ctx = ctx
        self._out = ctx.out
        self._config = ctx.config
        self._side = ctx.side
        self._halves = halves
        self._rx_of = halves.rx_of
        self._rx = rx
        self._tx = tx
        self._queue_max = ctx.config.max_receiver_queue_messages
        self._queue_max_bytes = ctx.config.max_receiver_queue_bytes
        self._queue_max_halves = ctx.config.max_receiver_queue_halves
        self._overhead = ctx.config.held_item_overhead
        self._ack_delay = ctx.config.ack_delay

    def receive(
        self,
        channel: int,
        first: int,
        payloads: Sequence[bytes],
        sizes: Sequence[int],
        credit_sid: int | None,
        reliable: bool = True,
        attachments: tuple[int, ...] = (),
    ) -> tuple[int, int]:
        """The one way in: messages `first`, `first`+1, ... of `channel` (`attachments` belong to a batch of one),
        arrived on stream `credit_sid` with wire `sizes` (None, 0: in datagrams), processed in order.

        Returns (messages processed, credit held): each processed message is queued, its credit held until it is
        taken, or dropped (its credit due now). A batch whose front meets the fast conditions is queued at once
        (`_queue_next`); any other message goes through `_process` alone. A reliable message that finds its
        queue full stops the batch: QueueFull if it is the first (nothing changed), else the count so far."""
        n = len(payloads)
        done = held = 0
        while done < n:
            if not attachments:
                k = (self._queue_next(channel, first + done, payloads, sizes, done, credit_sid) if reliable
                     else self._queue_unreliable(channel, first + done, payloads[done]))
                if k:
                    if credit_sid is not None:
                        held += sizes[done] if k == 1 else sum(sizes[done : done + k])
                    done += k
                    continue
            try:
                queued = self._process(channel, first + done, payloads[done], attachments, reliable, credit_sid,
                                       sizes[done])
            except QueueFull:
                if done:
                    return done, held
                raise
            if queued and credit_sid is not None:
                held += sizes[done]
            done += 1
            if self._ctx.closed:
                break
        return done, held

    def _process(self, channel: int, n: int, payload: bytes, attachments: tuple[int, ...], reliable: bool,
                 credit_sid: int | None, size: int) -> bool:
        """Route and process one Message the general way; return whether it was queued (its credit then waits)."""
        if n >= MAX_RANGE_END:
            raise ProtocolError(f"message number {n} on channel {ChannelId(channel)}: its ack would end at "
                                "2^64, past the var len int")
        found = self._rx_of.get(channel)
        if n != 0 and ChannelId(channel).oneshot:
            raise ProtocolError(f"Message number {n} on oneshot channel {ChannelId(channel)}")
        if found is None:
            cid = ChannelId(channel)
            if cid.to is not self._side:
                raise ProtocolError(f"Message on channel {cid}, whose receiver would be the sender's own side")
            if cid.minted_by is self._side or channel in self._halves.unclaimed or self._halves.was_claimed(channel):
                return False  # a receiver for it was handed out and is gone: no ghost
            if self._halves.recently_discarded(channel):
                return False
            r = self._rx.create(cid, claimed=False)
        else:
            r = found  # a receiver exists only for channels flowing to us
        acks = r.acks or r.ledger()
        if reliable:
            if acks.has_reliable(n):
                raise ProtocolError(f"reliable message {n} on channel {channel} received twice")
            if acks.finish_count is not None and n >= acks.finish_count:
                raise ProtocolError(f"reliable message {n} on channel {channel} beyond its FinishSender count")
        else:
            if n < acks.unrel_start or n in acks.unrel_received:
                return False  # nacked already (or a duplicate): never delivered
            if acks.finish_count is not None and n >= acks.declared:
                raise ProtocolError(f"unreliable message {n} on channel {channel} beyond the declared count")
        if r.oneshot and r.messages_seen:
            raise ProtocolError(f"second message on oneshot channel {channel}")
        queue = r.queue
        if queue is None:
            queue = r.queue = MessageQueue(self._queue_max, self._queue_max_bytes, self._overhead)
        if not queue.has_room(1, len(payload)):
            if not reliable:
                return False  # dropped: it will be nacked like a lost datagram
            if not queue:
                raise ProtocolError(
                    f"a message on channel {channel} is larger than a receiver queue may hold", CloseCode.LIMIT_EXCEEDED
                )
            raise QueueFull(r.handle)
        if attachments and queue and queue.halves + len(attachments) > self._queue_max_halves:
            if not reliable:
                return False  # (as for a full queue: dropped, then nacked)
            raise QueueFull(r.handle)  # (each queued half costs a channel's state: ~2.3 KB for ~40 B of frame)
        taken = self._take_attachments(attachments)
        r.messages_seen += 1
        if reliable:
            acks.mark_reliable(n)
        else:
            acks.unrel_received.add(n, n + 1)
        self._rx.check_ranges(r)
        if acks.ack_due is None and not (reliable and acks.on_take):  # (tested here: once per ack delay)
            acks.owe_acks(self._ctx.now + self._ack_delay)
        # the wire does not tell ordered from unordered stream messages: both read as ORDERED
        delivery = Delivery.ORDERED if reliable else Delivery.UNRELIABLE
        was_empty = not queue
        queue.put((Delivered(payload, taken, r.channel, n, delivery), credit_sid, size), len(payload))
        if r.state is RState.CLOSE_WAIT:
            self._rx.discard_queues([r], lost=False)  # returns its credit: report it as deferred
        elif was_empty and r.exposed and not r.app_dropped:
            self._out.event(MessageAvailable(r.handle))
        if r.state is RState.FINISHING:
            self._rx.check_finished(r)
        if not (reliable and not acks.declarations and self._ctx.timers.armed_at((ACKS, r.handle)) == acks.ack_due):
            self._rx.schedule(r)
        return credit_sid is not None

    def _queue_next(self, channel: int, first: int, payloads: Sequence[bytes], sizes: Sequence[int], at: int,
                    credit_sid: int | None) -> int:
        """The fast conditions for reliable messages without attachments: queue `payloads[at:]` (numbered from
        `first`) as `_process` would one by one, while the channel's receiver is open, they are next in order
        and its queue has room; return how many were queued (0: nothing changed)."""
        r = self._rx_of.get(channel)
        if r is None or r.oneshot:
            return 0
        acks = r.acks or r.ledger()
        if r.state is not _ROPEN or first != acks.done_prefix or acks.finish_count is not None or acks.rel_done:
            return 0
        queue = r.queue
        if queue is None:  # (the first message: an idle receiver holds no queue)
            queue = r.queue = MessageQueue(self._queue_max, self._queue_max_bytes, self._overhead)
        if at or len(payloads) != len(sizes):
            payloads, sizes = payloads[at:], sizes[at:]
        k = len(payloads)
        nbytes = len(payloads[0]) if k == 1 else sum(map(len, payloads))
        if not queue.has_room(k, nbytes):
            k, nbytes = queue.fitting(list(payloads))
            if not k:
                return 0
        # The timer always holds what Receivers.schedule would set; if acks were owed already (with their time
        # set), more numbers to ack leave that unchanged.
        owed = acks.ack_due is not None and bool(acks.rel_pending)
        was_empty = not queue
        r.messages_seen += k
        acks.in_order(first, k)
        on_take = acks.on_take  # (its acks are owed when the application takes them: receiving.py)
        if acks.ack_due is None and not on_take:  # (tested here: the call is made once per ack delay)
            acks.owe_acks(self._ctx.now + self._ack_delay)
        if k == 1:  # (building the iterators below costs more than one message)
            queue.put((Delivered(payloads[0], (), r.channel, first, _ORDERED), credit_sid, sizes[0]), nbytes)
        else:
            queue.put_run(
                zip(
                    map(Delivered, payloads[:k], repeat(()), repeat(r.channel), range(first, first + k),
                        repeat(_ORDERED)),
                    repeat(credit_sid),
                    sizes[:k],
                ),
                nbytes,
                k,
            )
        if was_empty and r.exposed and not r.app_dropped:
            self._out.event(MessageAvailable(r.handle))
        if not owed and not on_take:
            self._rx.schedule(r)
        return k

    def _queue_unreliable(self, channel: int, n: int, payload: bytes) -> int:
        """The fast conditions for an unreliable message without attachments: queue it as `_process` would if its
        channel's receiver is open, it is past every number received and the queue has room; return 1 (queued)
        or 0 (nothing changed)."""
        r = self._rx_of.get(channel)
        if r is None:
            return 0
        acks = r.acks or r.ledger()
        if r.state is not _ROPEN or r.oneshot or acks.finish_count is not None:
            return 0
        start = acks.unrel_start
        received = acks.unrel_received
        top = received.max_stop()
        if n < start or n < top or n >= MAX_RANGE_END:
            return 0
        queue = r.queue
        if queue is None:  # (the first message: an idle receiver holds no queue)
            queue = r.queue = MessageQueue(self._queue_max, self._queue_max_bytes, self._overhead)
        if not queue.offer((Delivered(payload, (), r.channel, n, _UNRELIABLE), None, 0), len(payload)):
            return 0
        # The timer always holds what Receivers.schedule would set; if acks were owed already (with their time
        # set), one more number to ack leaves that unchanged.
        ack_due = acks.ack_due
        owed = ack_due is not None and (start < acks.nack_upto or start in received or bool(acks.rel_pending))
        if ack_due is None:
            acks.owe_acks(self._ctx.now + self._ack_delay)
        r.messages_seen += 1
        received.add_one(n)
        if n != top and len(received) > 1:  # (a gap: the peer picks the holes, so they are capped)
            self._rx.check_ranges(r)
        if len(queue) == 1 and r.exposed and not r.app_dropped:
            self._out.event(MessageAvailable(r.handle))
        if not owed:
            self._rx.schedule(r)
        return 1

    def _take_attachments(self, ids: tuple[int, ...]) -> tuple[Attachment, ...]:
        out: list[Attachment] = []
        for index, raw in enumerate(ids):
            a = ChannelId(raw)
            if a.minted_by is self._side:
                raise ProtocolError(f"attachment {a} was minted by the side receiving it")
            if a == ENTRYPOINT:
                raise ProtocolError("the entrypoint channel cannot be attached")
            if a.to is self._side:
                pending = self._halves.claim(a)
                if pending is not None:
                    h = pending.handle
                elif a in self._rx_of:
                    raise ProtocolError(f"receiver of channel {a} handed out twice")
                else:
                    h = self._rx.create(a, claimed=True).handle
                self._halves.mark_claimed(a)
                out.append(Attachment(index, a, False, h))
            else:
                if a in self._halves.tx_of:
                    raise ProtocolError(f"sender of channel {a} attached twice")
                self._rx.check_channel_limit(1)
                out.append(Attachment(index, a, True, self._tx.create_remote(a).handle))
        return tuple(out)
