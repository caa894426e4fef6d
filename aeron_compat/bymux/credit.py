"""Credit arithmetic, shared by stream and global credit.

Theory of operation: credit is a 64-bit count where 2**64-1 means infinite.
Adding 0 makes credit infinite; adding to infinite credit is allowed only for
0 (ignored); a sum of exactly 2**64-1 is infinite; a larger sum is an error.
Sending consumes credit unless it is infinite. `restore_amount` is the spec's
Appendix B rule for when a receiver should top credit up.
"""

from __future__ import annotations

from .codec import MAX_U64

INFINITE = MAX_U64
"""Credit that never runs out (the largest 64-bit value, as the protocol encodes it)."""


class CreditOverflow(ValueError):
    """The sum of available and added credit exceeds 2**64-1."""


class CreditOnInfinite(ValueError):
    """Non-zero credit added to infinite credit."""


def add_credit(current: int, amount: int) -> int:
    """Credit after adding `amount` (0 meaning: make it infinite) to `current`."""
    if current == INFINITE:
        if amount:
            raise CreditOnInfinite(f"{amount} added to infinite credit")
        return INFINITE
    if amount == 0:
        return INFINITE
    total = current + amount
    if total > INFINITE:
        raise CreditOverflow(f"{current} + {amount} exceeds 2**64-1")
    return total


def consume_credit(current: int, amount: int) -> int:
    """Credit left after sending `amount` bytes (or streams); ValueError if not enough."""
    if current == INFINITE:
        return INFINITE
    if amount > current:
        raise ValueError(f"{amount} exceeds credit {current}")
    return current - amount


def restore_amount(window: int, held: int, outstanding: int) -> int:
    """Credit to grant now under Appendix B, or 0 to wait.

    `window` is what we are willing to hold, `held` what we hold unprocessed,
    `outstanding` the credit the peer still has. We grant what the window
    leaves free, but only once that is at least the peer's outstanding credit
    (and at least one), so credit packets get rarer as the peer has more.
    """
    if outstanding == INFINITE:
        return 0
    free = window - held - outstanding
    return free if free >= max(outstanding, 1) else 0
