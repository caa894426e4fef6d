"""Stats: the message and byte counters of one connection, by delivery mode."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.app import Delivery

_UNRELIABLE, _UNORDERED = Delivery.UNRELIABLE, Delivery.UNORDERED  # (a member looked up on its enum costs ~100-200 ns)


@dataclass
class Stats:
    """Counters of one connection: totals, and the unordered and unreliable parts of them.

    Ordered is the default mode, so only the two others are counted apart (one comparison per message);
    `by_mode()` derives the ordered share."""

    messages_sent: int = 0
    bytes_sent: int = 0
    messages_received: int = 0
    bytes_received: int = 0
    unordered_sent: int = 0
    unordered_bytes_sent: int = 0
    unreliable_sent: int = 0
    unreliable_bytes_sent: int = 0
    unordered_received: int = 0
    unordered_bytes_received: int = 0
    unreliable_received: int = 0
    unreliable_bytes_received: int = 0

    def by_mode(self) -> dict[str, tuple[int, int, int, int]]:
        """mode -> (messages sent, bytes sent, messages received, bytes received)."""
        unordered = (self.unordered_sent, self.unordered_bytes_sent, self.unordered_received,
                     self.unordered_bytes_received)
        unreliable = (self.unreliable_sent, self.unreliable_bytes_sent, self.unreliable_received,
                      self.unreliable_bytes_received)
        totals = (self.messages_sent, self.bytes_sent, self.messages_received, self.bytes_received)
        ordered = tuple(t - a - b for t, a, b in zip(totals, unordered, unreliable, strict=True))
        return {"ordered": ordered, "unordered": unordered, "unreliable": unreliable}  # type: ignore[dict-item]

    def count_sent(self, delivery: Delivery, nbytes: int) -> None:
        """One message sent (ConnectionLink counts every send here)."""
        self.messages_sent += 1
        self.bytes_sent += nbytes
        if delivery is _UNRELIABLE:
            self.unreliable_sent += 1
            self.unreliable_bytes_sent += nbytes
        elif delivery is _UNORDERED:
            self.unordered_sent += 1
            self.unordered_bytes_sent += nbytes

    def count_received_apart(self, delivery: Delivery, nbytes: int) -> None:
        """A received message that was not ordered (the totals are counted per batch)."""
        if delivery is _UNRELIABLE:
            self.unreliable_received += 1
            self.unreliable_bytes_received += nbytes
        else:
            self.unordered_received += 1
            self.unordered_bytes_received += nbytes
