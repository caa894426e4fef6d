"""The bench protocol: commands a measuring client sends its peer, per transport family.

Every workload starts with a one-byte command on a fresh carrier (an
Aqueduct message with attached halves; a raw QUIC stream; a TCP
connection):

- SINK: count the messages that follow until the end, then reply the count.
- ECHO: send every message back until the end.
- CHANNELS (Aqueduct): every message carries a Receiver; take its one message, close it; reply the count.
- HOLD (Aqueduct): keep every Receiver that arrives, idle, until the end; reply the count.
- DATAGRAMS (raw QUIC): count the datagrams arriving until the stream ends; reply the count.
- PING: reply once (connection set-up: time to the first echo).
- REQUEST (Aqueduct): the command byte followed by a body, with a reply half attached (a fresh oneshot:
  `aqueduct.request`); the body comes back on it. The peer rows' request/reply (peers/aqueduct.py).
- STREAMS_SINK (raw QUIC): count the messages that arrive each on its own new unidirectional stream (one frame,
  then FIN) until this stream ends; reply the count. The reference for Aqueduct's unordered channels, which
  the spec sends one stream per message.
- STREAMS_ECHO (raw QUIC): send every message arriving on its own unidirectional stream back on this stream.
- TYPED_SINK (Aqueduct, typed rows): SINK on a channel typed `BenchOrder` (bench/typed.py): each message
  is converted and validated.
- TYPED_CHANNELS (Aqueduct, typed rows): CHANNELS where every message is a `BenchCarrier` holding a typed
  `Receiver[BenchOrder]`.

Aqueduct codecs differ in how a command and its halves are packed: `pack`
and `unpack` hide that (raw: RawMessage(command, halves); CBOR: a list
[command, *halves]).
"""

from __future__ import annotations

from typing import Any

from ..api.codec import RawMessage

SINK, ECHO, CHANNELS, HOLD, DATAGRAMS, PING, REQUEST = b"S", b"E", b"C", b"H", b"D", b"P", b"Q"
TYPED_SINK, TYPED_CHANNELS = b"T", b"U"
STREAMS_SINK, STREAMS_ECHO = b"V", b"W"
COUNT_BYTES = 8


def pack(codec: str, data: bytes, halves: list[Any] | None = None) -> Any:
    """An application object carrying `data` and `halves` for the codec called `codec`."""
    if codec == "raw":
        return RawMessage(data, halves or []) if halves else data
    return [data, *halves] if halves else data


def unpack(codec: str, obj: Any) -> tuple[bytes, list[Any]]:
    """(data, halves) of a received object."""
    if codec == "raw":
        return obj.data, obj.attachments
    if isinstance(obj, list):
        return obj[0], obj[1:]
    return obj, []


def encode_count(n: int) -> bytes:
    """A count as a reply payload."""
    return n.to_bytes(COUNT_BYTES, "big")


def decode_count(data: bytes) -> int:
    """The count in a reply payload."""
    return int.from_bytes(data[:COUNT_BYTES], "big")
