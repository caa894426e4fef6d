"""Transport settings and the aioquic configurations built from them.

One `TransportSettings` holds every knob of the QUIC layer (windows, idle
timeout, keep-alive, datagram sizes, socket buffers); `client_configuration`
and `server_configuration` turn it into aioquic `QuicConfiguration`s with
ALPN "aqueduct" and RFC 9221 datagrams on. TLS is always on: a client
verifies the server against `ca` (a PEM file) or a pinned SHA-256
fingerprint; with neither it uses the system trust store. There is no
switch that turns verification off. A client may present a certificate
(`cert`, `key`) to a server that verifies clients (quic/mtls.py).
`paced_engine_config` is the engine configuration those settings imply
(queue caps the receive window bounds).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from aioquic.quic.configuration import QuicConfiguration
from aioquic.tls import SessionTicket

from ..core.config import EngineConfig
from ..errors import ConfigError
from .credentials import check_ca_file, load_cert_and_key

ALPN = "aqueduct"

# Bytes of a 1-RTT packet that are not DATAGRAM payload: short header (1 + 20-byte CID max
# + 4-byte packet number), AEAD tag (16), DATAGRAM frame type and length (1 + 2), plus slack
# for an ACK frame aioquic may put first.
PACKET_OVERHEAD = 64
CONGESTION_CONTROLS = ("reno", "cubic")
"""aioquic's congestion controllers (aioquic >= 1.2)."""


@dataclass(frozen=True)
class TransportSettings:
    """Every QUIC-level knob of a connection, with defaults."""

    stream_window: int = 1024 * 1024
    """Receive window per stream: bytes the peer may send beyond what the application has taken."""
    connection_window: int = 4 * 1024 * 1024
    """Receive window for the whole connection, paced the same way."""
    send_buffer: int = 256 * 1024
    """Bytes written to one stream but not yet acknowledged before `Sender.send` waits."""
    connection_send_buffer: int = 4 * 1024 * 1024
    """The same bound summed over all streams of a connection."""
    idle_timeout: float = 30.0
    """The connection closes after this long without any packet."""
    keepalive: float | None = 10.0
    """A client sends a PING this often (None: never); keep below idle_timeout. A server's connections send
    none: the client's PINGs reset both ends' idle timers (a server pinging too doubled each idle connection's
    packets), and a client that sends none is timed out by the server's idle_timeout."""
    max_datagram_frame_size: int = 65535
    """Largest DATAGRAM frame we accept (transport parameter); must be present on both sides."""
    packet_size: int = 1200
    """Largest UDP payload we send (aioquic's max_datagram_size)."""
    socket_buffer: int = 4 * 1024 * 1024
    """SO_RCVBUF / SO_SNDBUF asked of the kernel (the default 208 KiB drops packets in bulk runs)."""
    handshake_timeout: float = 10.0
    """`connect` gives up after this long without a completed handshake; a server closes a connection
    whose handshake and client headers are not done by then (see limits.py)."""
    max_connections_per_address: int = 32
    """Server: connections one client IP address may hold at once; more are dropped at their first packet."""
    max_connections: int = 4096
    """Server: connections held at once over all addresses."""
    congestion_control: Literal["reno", "cubic"] = "reno"
    """aioquic's congestion controller for what this end sends: "reno" (aioquic's default) or "cubic".
    Reno: under loss on loopback CUBIC measured no better (decision QUIC-17)."""

    def __post_init__(self) -> None:
        if self.congestion_control not in CONGESTION_CONTROLS:
            raise ConfigError(f"congestion_control must be one of {', '.join(CONGESTION_CONTROLS)}, "
                              f"not {self.congestion_control!r}")

    def datagram_payload_limit(self, peer_max_frame: int | None) -> int:
        """Largest Aqueduct datagram that fits one packet and the peer's DATAGRAM frame limit."""
        fits_packet = self.packet_size - PACKET_OVERHEAD
        if peer_max_frame is None:
            return 0
        return max(0, min(fits_packet, peer_max_frame - 4))


def _base(settings: TransportSettings, is_client: bool) -> QuicConfiguration:
    return QuicConfiguration(
        alpn_protocols=[ALPN],
        is_client=is_client,
        idle_timeout=settings.idle_timeout,
        max_data=settings.connection_window,
        max_stream_data=settings.stream_window,
        max_datagram_frame_size=settings.max_datagram_frame_size,
        max_datagram_size=settings.packet_size,
        congestion_control_algorithm=settings.congestion_control,
    )


def client_configuration(
    settings: TransportSettings,
    *,
    server_name: str,
    ca: str | Path | None = None,
    pinned: bool = False,
    session_ticket: SessionTicket | None = None,
    cert: str | Path | None = None,
    key: str | Path | None = None,
) -> QuicConfiguration:
    """A client configuration: verify against `ca`, or (if `pinned`) defer to a fingerprint check after TLS.

    `cert` and `key`: the client certificate chain and key presented when a server asks (mutual TLS)."""
    config = _base(settings, is_client=True)
    if (cert is None) != (key is None):
        raise ConfigError("a client certificate needs both cert= and key=")
    if cert is not None and key is not None:
        _use_cert_and_key(config, cert, key)
    config.server_name = server_name
    config.session_ticket = session_ticket
    if pinned:
        # The handshake still proves the server holds the certificate's key (CertificateVerify);
        # the adapter then compares the certificate's fingerprint before any data is delivered.
        config.verify_mode = ssl.CERT_NONE
    else:
        config.verify_mode = ssl.CERT_REQUIRED
        if ca is not None:
            check_ca_file(ca)
            config.load_verify_locations(cafile=str(ca))
    return config


def server_configuration(settings: TransportSettings, *, cert: str | Path, key: str | Path) -> QuicConfiguration:
    """A server configuration with the given certificate chain (PEM) and key (ConfigError if either is unusable)."""
    config = _base(settings, is_client=False)
    _use_cert_and_key(config, cert, key)
    return config


def _use_cert_and_key(config: QuicConfiguration, cert: str | Path, key: str | Path) -> None:
    """What aioquic's `load_cert_chain` sets, from the files as read once (credentials.py)."""
    loaded = load_cert_and_key(cert, key)
    config.certificate = loaded.certificate
    config.certificate_chain = list(loaded.chain)
    config.private_key = loaded.private_key


SMALLEST_MESSAGE_FRAME = 5
"""Bytes of a Message frame with an empty payload and small channel and number."""


def paced_engine_config(config: EngineConfig, settings: TransportSettings, datagram_payload: int) -> EngineConfig:
    """The engine config for a paced connection: queue caps never trip before the receive window does.

    With receiver-paced credit the window already bounds what a peer can make us queue; a lower
    per-receiver message cap would turn a fast sender of small messages into a LIMIT_EXCEEDED close
    instead of backpressure.
    """
    return replace(
        config,
        max_datagram_payload=datagram_payload,
        max_receiver_queue_messages=max(
            config.max_receiver_queue_messages, settings.connection_window // SMALLEST_MESSAGE_FRAME + 1
        ),
        max_receiver_queue_bytes=max(config.max_receiver_queue_bytes, settings.connection_window),
    )
