# aeron:udp carried by Marlin Stream (`transport=stream` in the channel URI).  The same network as
# the Aqueduct media (aqueduct.py: which driver serves and which dials, the reg / unreg / setup
# control messages, matching, re-dialling), on another transport:
#  - a served endpoint is a listening StreamEndpoint; outgoing connections share one dial-only
#    StreamEndpoint per address family;
#  - a connection is a StreamLink (stream_link.py): the dialler's first stream carries control
#    messages both ways, and each publication session gets a stream of its own
#    (stream_session.py) instead of a pair of Aqueduct channels.
# No TLS: Stream's seed profile has no encryption, so this media suits trusted networks.
"""`StreamNetwork`: the Marlin Stream media for aeron:udp."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

from aqueduct.errors import AqueductError

from ..client.context import Context
from ..client.subscription import Subscription
from ..marlin.aio import StreamConnection, StreamEndpoint, StreamWriter
from .aqueduct import AqueductNetwork, _Listener
from .batch import BatchError
from .link import ControlLink
from .stream_link import CONTROL_LIMIT, StreamLink, decode_message, read_frame
from .stream_session import StreamSession, StreamSubscriber

HELLO_TIMEOUT = 10.0
"""How long an accepted connection has to open its control stream and say hello."""


class StreamNetwork(AqueductNetwork):
    """The driver's Marlin Stream endpoints: listeners, outgoing links, remote subscribers and sessions."""

    subscriber_type = StreamSubscriber

    def _secure(self, ctx: Context) -> None:
        """Nothing to load: the seed profile carries no TLS."""
        self._dialers: dict[int, StreamEndpoint] = {}
        self._dialer_lock = asyncio.Lock()

    async def _listen(self, host: str, port: int, listener: _Listener | None) -> str:
        closing = self._closing.pop(f"{host}:{port}", None)
        if closing is not None:
            await asyncio.wait([closing])
        listener = listener or _Listener(contextlib.AsyncExitStack())
        server = await StreamEndpoint.listen(host, port)
        listener.stack.callback(server.close)
        endpoint = f"{host}:{server.address[1]}"
        self.listeners[endpoint] = listener
        accepting = self.loop.create_task(self._accept_stream(endpoint, server))
        self.tasks.add(accepting)
        accepting.add_done_callback(self._task_done)
        listener.stack.callback(accepting.cancel)
        return endpoint

    async def _accept_stream(self, endpoint: str, server: StreamEndpoint) -> None:
        while True:
            conn = await server.accept()
            self.spawn(self._accepted_stream(endpoint, conn))

    async def _accepted_stream(self, endpoint: str, conn: StreamConnection) -> None:
        try:
            async with asyncio.timeout(HELLO_TIMEOUT):
                reader, writer = await conn.accept_stream()
                body = await read_frame(reader, CONTROL_LIMIT)
            hello = decode_message(body) if body is not None else {}
        except (AqueductError, BatchError, ConnectionError, TimeoutError):
            hello = {}
        if hello.get("t") != "hello":
            conn.close()
            return
        await self._serve_link(endpoint, StreamLink(self.on_control, conn, reader, writer, listener=endpoint))

    async def _open_link(self, host: str, port: int, endpoint: str) -> ControlLink:
        infos = await self.loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
        family, _, _, _, address = infos[0]
        dialer = await self._dialer(family)
        conn = await dialer.dial((str(address[0]), int(address[1])))
        reader, writer = conn.open_stream()
        link = StreamLink(self.on_control, conn, reader, writer, endpoint=endpoint)
        link.send_ctl({"t": "hello"})
        return link

    async def _dialer(self, family: int) -> StreamEndpoint:
        async with self._dialer_lock:
            dialer = self._dialers.get(family)
            if dialer is None:
                dialer = await StreamEndpoint.bind("::" if family == socket.AF_INET6 else "0.0.0.0", 0)
                self._dialers[family] = dialer
            return dialer

    def _on_setup(self, link: ControlLink, msg: dict[str, Any]) -> None:
        data, status = msg.get("data"), msg.get("status")
        if not isinstance(link, StreamLink) or not isinstance(data, asyncio.StreamReader) \
                or not isinstance(status, StreamWriter):
            raise ValueError("setup outside a session stream")
        sub: Subscription | None = None
        try:
            sub = self.setup_target(msg)
        finally:
            if sub is None:
                status.close()
        if sub is not None:
            self.start_session(StreamSession(self, link, sub, msg))

    async def _aclose(self) -> None:
        await super()._aclose()
        for dialer in self._dialers.values():
            dialer.close()
        self._dialers.clear()
