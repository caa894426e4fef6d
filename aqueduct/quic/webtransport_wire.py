"""The bytes and numbers of WebTransport over HTTP/3 that aioquic's H3 layer lacks: settings, error codes, capsules.

Pure functions, no I/O. What aioquic 1.x sends and parses for WebTransport (the CONNECT, the stream headers,
the datagram quarter stream ID, ENABLE_WEBTRANSPORT and H3_DATAGRAM) stays aioquic's; this module has the rest
that browsers need or send:

- settings: WT_MAX_SESSIONS (Safari asks for it; newer Chromium drafts read it), next to aioquic's own;
- application error codes: a WebTransport stream reset or STOP_SENDING carries an application code n (0 to
  2**32-1) mapped into the HTTP/3 error space as 0x52e4a40fa8db + n + n // 0x1e (draft-ietf-webtrans-http3,
  "Resetting Data Streams"; every 0x1f-th value is left for GREASE), and back;
- capsules on the session's CONNECT stream (RFC 9297's capsule protocol, carried in HTTP/3 DATA frames):
  CLOSE_WEBTRANSPORT_SESSION (a 32-bit code and a UTF-8 reason of at most 1024 bytes) is encoded and decoded
  here; a reader (`CapsuleReader`) splits the stream into capsules with a bound on a capsule's size.

A malformed capsule or an oversized one raises `WebTransportError`, which the adapter answers by closing the
session with PROTOCOL_VIOLATION (a QUIC peer's malformed frame gets the same code).

Spec: none of the Aqueduct protocol (the WebTransport mapping is specs/decisions/quic.md, QUIC-20 to QUIC-28).
"""

from __future__ import annotations

from aioquic._buffer import Buffer, BufferReadError
from aioquic.buffer import encode_uint_var

from ..wire.errors import AqueductError

WT_MAX_SESSIONS = 0xC671706A
"""SETTINGS_WT_MAX_SESSIONS (draft-ietf-webtrans-http3-07 onwards): how many sessions one connection may carry."""
ENABLE_WEBTRANSPORT_DRAFT02 = 0x2B603742
"""SETTINGS_ENABLE_WEBTRANSPORT of the earlier drafts (aioquic sends it; Chromium's draft-02 mode reads it)."""
H3_DATAGRAM_DRAFT04 = 0xFFD277
"""The H3_DATAGRAM setting before RFC 9297 (0x33): still read by some browsers' older releases."""

CLOSE_WEBTRANSPORT_SESSION = 0x2843
DRAIN_WEBTRANSPORT_SESSION = 0x78AE
MAX_CLOSE_REASON = 1024
"""Bytes of UTF-8 a CLOSE_WEBTRANSPORT_SESSION reason may hold."""
MAX_CAPSULE = 4 + MAX_CLOSE_REASON + 64
"""The largest capsule a session's CONNECT stream may carry here (the close capsule and a little room); more is
a protocol error, so a peer cannot make the server buffer an endless capsule."""

_FIRST_CODE = 0x52E4A40FA8DB
_LAST_CODE = 0x52E5AC983162
SESSION_GONE = 0x170D7B68
"""WT_SESSION_GONE: the HTTP/3 code a browser resets a session's streams with when the session ends."""
BUFFERED_STREAM_REJECTED = 0x3994BD84
"""WT_BUFFERED_STREAM_REJECTED: the code for a stream of a session that is not (or no longer) there."""
H3_NO_ERROR = 0x100


class WebTransportError(AqueductError):
    """A WebTransport peer sent a malformed or oversized capsule on its session's CONNECT stream."""


def http_code(code: int) -> int:
    """The HTTP/3 error code carrying WebTransport application error code `code` (0 <= code < 2**32)."""
    return _FIRST_CODE + code + code // 0x1E


def app_code(http: int) -> int | None:
    """The WebTransport application error code an HTTP/3 error code carries, or None (outside the range, or a
    GREASE value)."""
    if not _FIRST_CODE <= http <= _LAST_CODE or (http - 0x21) % 0x1F == 0:
        return None
    shifted = http - _FIRST_CODE
    return shifted - shifted // 0x1F


def close_capsule(code: int, reason: str) -> bytes:
    """CLOSE_WEBTRANSPORT_SESSION with `code` (taken mod 2**32) and `reason` cut to MAX_CLOSE_REASON bytes (at
    a character boundary)."""
    data = reason.encode()[:MAX_CLOSE_REASON].decode(errors="ignore").encode()
    value = (code & 0xFFFFFFFF).to_bytes(4, "big") + data
    return encode_uint_var(CLOSE_WEBTRANSPORT_SESSION) + encode_uint_var(len(value)) + value


def parse_close(value: bytes) -> tuple[int, str]:
    """The (code, reason) of a CLOSE_WEBTRANSPORT_SESSION capsule's value."""
    if len(value) < 4 or len(value) > 4 + MAX_CLOSE_REASON:
        raise WebTransportError(f"CLOSE_WEBTRANSPORT_SESSION of {len(value)} bytes")
    try:
        reason = value[4:].decode()
    except UnicodeDecodeError as exc:
        raise WebTransportError("CLOSE_WEBTRANSPORT_SESSION reason is not UTF-8") from exc
    return int.from_bytes(value[:4], "big"), reason


class CapsuleReader:
    """Splits a CONNECT stream's data into (type, value) capsules, holding at most MAX_CAPSULE bytes."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = b""

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """The capsules `data` completes (WebTransportError once a capsule would exceed MAX_CAPSULE)."""
        self._held += data
        out: list[tuple[int, bytes]] = []
        while self._held:
            buf = Buffer(data=self._held)
            try:
                kind = buf.pull_uint_var()
                length = buf.pull_uint_var()
            except BufferReadError:
                if len(self._held) > 16:
                    raise WebTransportError("malformed capsule header") from None
                break
            if length > MAX_CAPSULE:
                raise WebTransportError(f"a capsule of {length} bytes (at most {MAX_CAPSULE})")
            start = buf.tell()
            if len(self._held) < start + length:
                break
            out.append((kind, self._held[start:start + length]))
            self._held = self._held[start + length:]
        return out

    @property
    def pending(self) -> bool:
        """Whether part of a capsule is held (a stream that ends now ends mid-capsule)."""
        return bool(self._held)

    @property
    def held(self) -> int:
        """Bytes of a partial capsule held (at most MAX_CAPSULE plus a header)."""
        return len(self._held)
