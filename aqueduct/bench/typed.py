"""The typed rows' message types: a 3-field message of about 64 bytes of CBOR, and one carrying a channel.

Both ends of a typed row check (sender) and convert (receiver) every message with these types, which is
what a typed service pays per message."""

from __future__ import annotations

import msgspec

from ..api.halves import Receiver


class BenchOrder(msgspec.Struct):
    """Three fields, 64 bytes as CBOR with `sample_order()`'s values."""

    account: str
    sym: str
    qty: int


class BenchCarrier(msgspec.Struct):
    """A message whose field is the Receiver of a fresh typed channel."""

    seq: int
    inbox: Receiver[BenchOrder]


def sample_order(qty: int = 100) -> BenchOrder:
    """The message the typed rows send (64 bytes of CBOR)."""
    return BenchOrder("acct-0000000000000001", "ABCDEFGHIJK", qty)
