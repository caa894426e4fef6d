# aeron:udp carried by Marlin Stream (`transport=stream` in the channel URI): the driver network
# (network.py: which driver serves and which dials, the reg / unreg / setup control messages, matching,
# re-dialling) on this transport:
#  - a served endpoint is a listening StreamEndpoint; outgoing connections share one dial-only
#    StreamEndpoint per address family;
#  - a connection is a MarlinLink (marlin_link.py): the dialler's first stream carries control
#    messages both ways, and each publication session gets a stream of its own
#    (marlin_session.py) instead of a pair of Aqueduct channels.
# No TLS: Stream's seed profile has no encryption, so this transport suits trusted networks.
"""`MarlinTransport`: the Marlin Stream transport of the driver network."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

from aqueduct.errors import AqueductError

from ..marlin.aio import StreamConnection, StreamEndpoint, StreamWriter
from .batch import BatchError
from .link import ControlLink, OnControl
from .marlin_link import CONTROL_LIMIT, MarlinLink, decode_message, read_frame
from .marlin_session import MarlinSession, MarlinSink
from .transport import Listening

HELLO_TIMEOUT = 10.0
"""How long an accepted connection has to open its control stream and say hello."""


async def _connections(server: StreamEndpoint) -> AsyncIterator[StreamConnection]:
    while True:
        yield await server.accept()


class MarlinTransport:
    """Marlin Stream connections between drivers (implements `Transport`); no TLS: the seed profile has none."""

    sink_type = MarlinSink
    session_type = MarlinSession

    def __init__(self) -> None:
        self._dialers: dict[int, StreamEndpoint] = {}
        self._dialer_lock = asyncio.Lock()

    async def listen(self, host: str, port: int, stack: contextlib.AsyncExitStack) -> Listening:
        """A listening Stream endpoint on `host:port`, closed with `stack`."""
        server = await StreamEndpoint.listen(host, port)
        stack.callback(server.close)
        return Listening(server.address[1], _connections(server))

    async def greet(self, peer: StreamConnection, on_control: OnControl, listener: str) -> ControlLink | None:
        """The link of a connection that opens its control stream and says hello in time."""
        try:
            async with asyncio.timeout(HELLO_TIMEOUT):
                reader, writer = await peer.accept_stream()
                body = await read_frame(reader, CONTROL_LIMIT)
            hello = decode_message(body) if body is not None else {}
        except (AqueductError, BatchError, ConnectionError, TimeoutError):
            hello = {}
        if hello.get("t") != "hello":
            peer.close()
            return None
        return MarlinLink(on_control, peer, reader, writer, listener=listener)

    async def dial(self, host: str, port: int, endpoint: str, on_control: OnControl) -> ControlLink:
        """One connection to `endpoint` from the shared dialler of its address family (its hello queued)."""
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_DGRAM)
        family, _, _, _, address = infos[0]
        dialer = await self._dialer(family)
        conn = await dialer.dial((str(address[0]), int(address[1])))
        reader, writer = conn.open_stream()
        link = MarlinLink(on_control, conn, reader, writer, endpoint=endpoint)
        link.send_ctl({"t": "hello"})
        return link

    async def _dialer(self, family: int) -> StreamEndpoint:
        async with self._dialer_lock:
            dialer = self._dialers.get(family)
            if dialer is None:
                dialer = await StreamEndpoint.bind("::" if family == socket.AF_INET6 else "0.0.0.0", 0)
                self._dialers[family] = dialer
            return dialer

    def check_setup(self, link: ControlLink, msg: dict[str, Any]) -> None:
        """A setup arrives on a session stream of a MarlinLink, its reader under "data", its writer under
        "status"."""
        if not isinstance(link, MarlinLink) or not isinstance(msg.get("data"), asyncio.StreamReader) \
                or not isinstance(msg.get("status"), StreamWriter):
            raise ValueError("setup outside a session stream")

    def refuse_setup(self, msg: dict[str, Any]) -> None:
        """End our half of a refused session's stream."""
        msg["status"].close()

    async def aclose(self) -> None:
        """Close the dialling endpoints."""
        for dialer in self._dialers.values():
            dialer.close()
        self._dialers.clear()
