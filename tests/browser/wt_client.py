"""A Python WebTransport client for the tests: what a browser does, on aioquic's H3, with the client's engine.

`open_session(address, cert_hash, path=, origin=)` makes an h3 QUIC connection pinned to the server certificate's
SHA-256 (as `serverCertificateHashes` pins it), sends the extended CONNECT with an Origin, and once the server says
200 runs an Aqueduct client engine over the session: a `Connection` as `aqueduct.connect` gives. The stream mapping
is the server's (quic/webtransport.py) seen from the other end: the engine's own streams become WebTransport streams
in the order it opens them (its first, stream 0, is the connection control stream: the first bidi stream), the
server's get the next engine ID of their kind as they arrive.

`raw_session(...)` stops after the CONNECT's answer and gives the protocol itself, for hostile tests that write bytes
the engine never would (`.send_raw`, `.datagram_raw`).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from aioquic.h3 import events as h3e

from aqueduct.api.codec import CODEC_HEADER, DEFAULT_CODEC, Codec
from aqueduct.api.connection import Connection
from aqueduct.api.link import ConnectionLink
from aqueduct.quic.aioquic_connection import PacedQuicConnection
from aqueduct.quic.endpoint import _connected_endpoint
from aqueduct.quic.settings import TransportSettings, client_configuration
from aqueduct.quic.webtransport import WebTransportOptions, WebTransportProtocol, WebTransportSessions
from aqueduct.wire.channel_id import Side


class ClientSession(WebTransportProtocol):
    """The client end of one WebTransport session carrying Aqueduct."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, webtransport=WebTransportSessions(WebTransportOptions()), **kwargs)
        self._next_bidi = 1
        self.status: asyncio.Future[int] = self._loop.create_future()
        self.closed_with: tuple[int, str] | None = None

    def _process_events(self) -> None:
        if self.h3 is None:
            from aqueduct.quic.webtransport import WebTransportH3

            self.h3 = WebTransportH3(self._quic, enable_webtransport=True)
            self._use_session_writes()
        super()._process_events()

    def send_connect(self, authority: str, path: str, origin: str | None) -> None:
        assert self.h3 is not None
        sid = self._quic.get_next_available_stream_id()
        headers = [(b":method", b"CONNECT"), (b":protocol", b"webtransport"), (b":scheme", b"https"),
                   (b":authority", authority.encode()), (b":path", path.encode())]
        if origin is not None:
            headers.append((b"origin", origin.encode()))
        self.h3.send_headers(sid, headers)
        self._connect_stream = sid
        self.transmit()

    def _request(self, ev: h3e.HeadersReceived) -> None:  # the CONNECT's answer
        status = int(dict(ev.headers)[b":status"])
        if status == 200:
            self.session_id = ev.stream_id
            self.datagram_prefix = bytes([ev.stream_id // 4])
            self.start_engine()
            if self.engine is not None:
                from aqueduct.core import transport as tp

                self.engine.handle_event(tp.HandshakeCompleted(False, False), self._loop.time())
        if not self.status.done():
            self.status.set_result(status)

    def _peer_stream(self, qid: int) -> int | None:
        vid = self.vid.get(qid)
        if vid is None:
            if qid & 2:
                vid, self._next_uni = self._next_uni + 1, self._next_uni + 4  # server uni: 3, 7, ...
            else:
                vid, self._next_bidi = self._next_bidi, self._next_bidi + 4
            self._map(vid, qid)
        return vid

    def stream_for_write(self, vid: int) -> int | None:
        qid = self.qid.get(vid)
        if qid is None and not vid & 1 and self.h3 is not None and self.session_id is not None:
            qid = self.h3.create_webtransport_stream(self.session_id, is_unidirectional=bool(vid & 2))
            self._map(vid, qid)
        return qid

    def _peer_closed(self, code: int, reason: str, now: float) -> None:
        self.closed_with = (code, reason)
        super()._peer_closed(code, reason, now)

    # ---- hostile ----
    def send_raw(self, data: bytes, *, uni: bool = True, end: bool = False) -> int:
        """Open a WebTransport stream of the session and write `data` on it (bypassing the engine)."""
        assert self.h3 is not None and self.session_id is not None
        qid = self.h3.create_webtransport_stream(self.session_id, is_unidirectional=uni)
        self._quic.send_stream_data(qid, data, end)
        self.transmit()
        return qid

    def datagram_raw(self, data: bytes) -> None:
        self._quic.send_datagram_frame(self.datagram_prefix + data)
        self.transmit()


async def raw_session(address: tuple[str, int], cert_hash: str, *, path: str = "/aqueduct",
                      origin: str | None = "http://127.0.0.1", settings: TransportSettings | None = None,
                      headers: list[tuple[str, bytes]] | None = None) -> ClientSession:
    """An h3 connection with the CONNECT sent and answered (`.status`); the engine runs if it was 200."""
    settings = settings or TransportSettings()
    config = client_configuration(settings, server_name="localhost", pinned=True)
    config.alpn_protocols = ["h3"]
    quic = PacedQuicConnection(configuration=config)
    if headers is None:
        headers = [(CODEC_HEADER, DEFAULT_CODEC.name.encode())]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.connect(address)

    def factory() -> ClientSession:
        return ClientSession(quic, side=Side.CLIENT, headers=headers, settings=settings, pinned_fingerprint=cert_hash)

    protocol = await _connected_endpoint(factory, sock)
    protocol.connect(address)
    await asyncio.wait_for(protocol.handshake, 10)
    protocol.send_connect(f"127.0.0.1:{address[1]}", path, origin)
    await asyncio.wait_for(protocol.status, 10)
    return protocol


async def open_session(address: tuple[str, int], cert_hash: str, codec: Codec = DEFAULT_CODEC,
                       **kwargs: Any) -> Connection[Any]:
    """An Aqueduct connection over a WebTransport session (raises if the CONNECT was refused)."""
    protocol = await raw_session(address, cert_hash, headers=[(CODEC_HEADER, codec.name.encode())], **kwargs)
    if protocol.status.result() != 200:
        raise ConnectionRefusedError(f"CONNECT answered {protocol.status.result()}")
    link: ConnectionLink[Any] = ConnectionLink(protocol, codec)
    protocol.flush()
    await asyncio.wait_for(link.ready, 10)
    return Connection(link)
