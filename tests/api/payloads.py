"""Crafted CBOR payloads a hostile peer sends to a typed service, and the client codec that sends them as they are.

`ForgedCbor` announces the CBOR codec's name (so a CBOR server accepts the connection) but sends a
`RawMessage`'s bytes and attachments untouched: whatever bytes a test builds reach the server's decoder,
over a real connection. Anything else it encodes as the CBOR codec does, so the same connection also
carries well-formed messages. `ATTACKS` names each payload of issue 26 (items 1 and 2) with the number of
attachments that travel with it; tests/api/test_hostile_payloads.py and the red-team suite
(tests/reliability/test_redteam_payloads.py) send them.
"""

from __future__ import annotations

from typing import Any

import cbor2

from aqueduct.api.codec import ATTACHMENT_TAG, LAGGED_TAG, CborCodec, RawMessage
from aqueduct.api.halves import Half


class ForgedCbor(CborCodec):
    """The CBOR codec's name and decoder; a RawMessage goes out byte for byte, with its attachments."""

    def encode(self, obj: Any) -> tuple[bytes, list[Half]]:
        if isinstance(obj, RawMessage):
            return bytes(obj.data), list(obj.attachments)
        return super().encode(obj)


def shared_dag(depth: int) -> bytes:
    """A value-sharing DAG (tags 28/29): each level a pair of the same sub-value; 2**depth leaves as a tree."""
    value: Any = 0
    for _ in range(depth):
        value = [value, value]
    return cbor2.dumps(value, value_sharing=True)


SELF_LIST = bytes.fromhex("d81c81d81d00")
"""6 bytes: a shared list (tag 28) whose only element is a reference to itself (tag 29, index 0)."""


def tagged(tag: int, value: Any) -> bytes:
    return cbor2.dumps(cbor2.CBORTag(tag, value))


def with_sym(raw_field: bytes) -> bytes:
    """A map {"sym": "X", "reply": <raw_field>}: the reply field's bytes as given."""
    return b"\xa2" + cbor2.dumps("sym") + cbor2.dumps("X") + cbor2.dumps("reply") + raw_field


ATTACKS: dict[str, tuple[bytes, int]] = {
    "dag-40": (shared_dag(40), 0),
    "self-list": (SELF_LIST, 0),
    "lagged-tag": (tagged(LAGGED_TAG, 5), 0),
    "lagged-tag-nested": (with_sym(tagged(LAGGED_TAG, 5)), 1),
    "lagged-tag-bignum": (tagged(LAGGED_TAG, 10**6000), 0),
    "0xff": (b"\xff", 0),
    "truncated": (with_sym(tagged(ATTACHMENT_TAG, 0))[:-3], 1),
    "empty": (b"", 0),
    "attachment-7": (with_sym(tagged(ATTACHMENT_TAG, 7)), 1),
    "attachment-minus-1": (with_sym(tagged(ATTACHMENT_TAG, -1)), 1),
    "attachment-twice": (b"\x82" + tagged(ATTACHMENT_TAG, 0) * 2, 1),
    "nested-100000": (b"\x81" * 100_000 + b"\x00", 0),
    "huge-array-header": (b"\x9b" + b"\xff" * 8, 0),
}
"""name -> (payload, how many reply channels travel with it as attachments)."""
