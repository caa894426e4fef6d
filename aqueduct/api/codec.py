"""Serialization middleware: a `Codec` turns application objects into payload bytes plus halves to attach.

`encode(obj)` returns the payload and the Sender/Receiver objects found in it,
in attachment order; `decode(payload, halves)` rebuilds the object with the
halves the peer attached put back in place. Each side announces its codec in
the connection header `codec`; a peer announcing a different one fails the
connection at connect time (CloseCode.CODEC_MISMATCH).

`CborCodec` (cbor2) finds halves anywhere in the payload and writes each as
CBOR tag `ATTACHMENT_TAG` holding the attachment index; a value cbor2 does
not know (a dataclass, msgspec.Struct, enum) goes as its msgspec builtins. `RawCodec` carries
bytes as they are, with the halves as a separate list (`RawMessage`).

Decoding is the first thing a peer's bytes meet, so it refuses what would make
the rest of the receive path costly (SECURITY.md, "Payloads"; decision
SEC-5): value sharing (tags 28/29, which our encoder never writes)
would let a few hundred bytes decode into a DAG that every later walk sees as a
tree of 2**40 nodes, or into a value that contains itself; nesting deeper than
`max_depth` is refused by cbor2 itself; each attachment index may be used once and
must be one the message carried. So a decoded value is a tree no larger than its
payload. A broadcast's lag notice (`LAGGED_TAG`) is honoured only as a whole
payload and comes back as a `LagNotice` value: the receiver decides whether it may
raise Lagged (halves/receiver.py). Every refusal is a CodecError, and the halves
the refused message carried are ended at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import cbor2
import msgspec

from ..errors import CodecError as CodecError  # (defined with the other public errors; its home is here)
from ..errors import ConnectError
from . import validation
from .halves import Half, LagNotice, Receiver, Sender
from .halves.wiring import end_halves

CODEC_HEADER = "codec"
ATTACHMENT_TAG = 24945
"""CBOR tag (0x6171, "aq") whose content is the index of an attachment of the message."""
LAGGED_TAG = 24946
"""CBOR tag whose content is how many broadcast messages a subscriber missed: a whole payload of it decodes as
`LagNotice(n)`, which a subscriber's receiver raises as `Lagged(n)`."""
_ATTACHMENT_HEAD = bytes((0xD9, ATTACHMENT_TAG >> 8, ATTACHMENT_TAG & 0xFF))
"""The head of an `ATTACHMENT_TAG` tag (major type 6, a two-byte tag number): the index follows it."""
_SHARING_TAGS = (28, 29)
"""CBOR value sharing (shareable, sharedref): refused when decoding."""
DEFAULT_MAX_DEPTH = 100
"""How deep a received CBOR payload may nest containers and tags (CborCodec(max_depth=...))."""
_MAX_LAG = 2**63


class Codec(Protocol):
    """Serialization middleware between application objects and message payloads."""

    name: str
    """Announced in the `codec` connection header; both sides must agree."""

    def encode(self, obj: Any) -> tuple[bytes, list[Half]]:
        """Payload bytes and the halves to attach, in attachment order."""
        ...

    def decode(self, payload: bytes, halves: Sequence[Half]) -> Any:
        """The application object for a payload and the halves attached to it."""
        ...


class CborCodec:
    """CBOR payloads; Sender/Receiver objects anywhere inside become attachments (a tagged index)."""

    name = "cbor-a1d0c7"
    max_depth: int = DEFAULT_MAX_DEPTH
    """How deep a received payload may nest arrays, maps and tags; a deeper one is refused (CodecError)."""

    def __init__(self, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        if max_depth < 1:
            raise ValueError("max_depth must be at least 1")
        self.max_depth = max_depth

    def encode(self, obj: Any) -> tuple[bytes, list[Half]]:
        """Encode `obj`, collecting the halves it contains."""
        found: list[Half] = []
        seen: set[int] = set()

        def default(encoder: cbor2.CBOREncoder, value: Any) -> None:
            if type(value) is LagNotice:
                encoder.encode(cbor2.CBORTag(LAGGED_TAG, value.n))
                return
            if not isinstance(value, Sender | Receiver):
                caps = validation.capabilities()
                if caps is not None and (type(value) is validation.Carried or caps.is_capability(value)):
                    value = caps.to_half(value.obj if type(value) is validation.Carried else value)
                    default(encoder, value)  # (a capability travels as a half: a service's call sender)
                    return
                # dataclasses, msgspec Structs, enums, ...: their builtins (halves inside kept for this hook)
                try:
                    plain = msgspec.to_builtins(value, builtin_types=validation.PASS_THROUGH,
                                                enc_hook=validation.enc_hook)
                except TypeError:
                    raise CodecError(f"cannot encode {type(value).__name__} as CBOR") from None
                encoder.encode(plain)
                return
            if id(value) in seen:
                raise CodecError("the same channel half appears twice in one message")
            seen.add(id(value))
            found.append(value)
            encoder.write(_ATTACHMENT_HEAD)  # (the tag's head written whole: a CBORTag object costs twice as much)
            encoder.encode(len(found) - 1)

        try:
            return cbor2.dumps(obj, default=default), found
        except cbor2.CBOREncodeError as exc:
            raise CodecError(str(exc)) from exc

    def decode(self, payload: bytes, halves: Sequence[Half]) -> Any:
        """Decode `payload`, replacing attachment tags by the given halves; a whole-payload lag notice is a
        LagNotice. CodecError if the payload is refused (the halves are then ended)."""
        used = [False] * len(halves)

        def tag_hook(tag: cbor2.CBORTag, _immutable: bool) -> Any:
            if tag.tag != ATTACHMENT_TAG:
                return tag  # (a LAGGED_TAG too: only a whole payload of it is a notice, see below)
            index = tag.value
            if type(index) is not int or not 0 <= index < len(halves):
                raise CodecError(f"attachment index {index!r} out of range (message has {len(halves)})")
            if used[index]:
                raise CodecError(f"attachment index {index} used twice")
            used[index] = True
            return halves[index]

        try:
            value = cbor2.loads(payload, tag_hook=tag_hook, semantic_decoders=_REFUSE_SHARING,
                                max_depth=self.max_depth)
        except Exception as exc:  # (cbor2 wraps what a hook raised; a decoder of a semantic tag may raise anything)
            end_halves(halves)
            cause = exc.__cause__
            if isinstance(cause, CodecError):
                raise CodecError(str(cause)) from None
            if isinstance(exc, CodecError):
                raise
            raise CodecError(f"malformed CBOR payload: {exc}") from None
        if type(value) is cbor2.CBORTag and value.tag == LAGGED_TAG:
            n = value.value
            if type(n) is not int or not 0 <= n < _MAX_LAG:
                end_halves(halves)
                raise CodecError("malformed lag notice")
            return LagNotice(n)
        return value


def _refuse_sharing(*_args: Any) -> Any:
    raise CodecError("CBOR value sharing (tags 28/29) is refused")


_REFUSE_SHARING = dict.fromkeys(_SHARING_TAGS, _refuse_sharing)


@dataclass(slots=True)
class RawMessage:
    """A raw-codec message: bytes plus the halves attached to it, in order."""

    data: bytes
    attachments: list[Half] = field(default_factory=list)


class RawCodec:
    """Bytes in, bytes out; attachments travel as an explicit list (send `RawMessage` or plain bytes)."""

    name = "raw"

    def encode(self, obj: Any) -> tuple[bytes, list[Half]]:
        """`bytes`-like or a RawMessage."""
        if type(obj) is bytes:  # the common case, first
            return obj, []
        if isinstance(obj, RawMessage):
            return bytes(obj.data), list(obj.attachments)
        if isinstance(obj, bytes | bytearray | memoryview):
            return bytes(obj), []
        raise CodecError(f"RawCodec sends bytes or RawMessage, not {type(obj).__name__}")

    def decode(self, payload: bytes, halves: Sequence[Half]) -> RawMessage:
        """Always a RawMessage, even without attachments."""
        return RawMessage(payload, list(halves) if halves else [])


DEFAULT_CODEC = CborCodec()


def codec_refusal(ours: Codec, theirs: bytes | None, side: str) -> str | None:
    """Why the peer's announced codec (its CODEC_HEADER) is refused by `side` ("client"/"server"), or None.

    A peer that names none is served. The reason names the server's codec and the client's, the same text
    whichever side refuses: the client may be the one that reads it (as the close reason)."""
    if theirs is None or theirs == ours.name.encode():
        return None
    peer = theirs.decode(errors="replace")
    server, client = (ours.name, peer) if side == "server" else (peer, ours.name)
    return f"codec mismatch: the server uses {server!r}, this client {client!r}"


class CodecMismatch(ConnectError):
    """The server and the client use different codecs: `connect` fails with it (a ConnectError: no channel
    existed yet, and retrying will not help)."""
