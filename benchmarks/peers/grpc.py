"""grpcio aio as a bench peer: unary request/reply and client-streaming one way, over h2c or TLS.

The service is generic (`grpc.method_handlers_generic_handler`) with no serializers, so messages are the
bytes themselves and no protoc step exists: `Call` (unary-unary) answers with the request's bytes;
`Sink` (stream-unary) counts the messages of a client stream and answers the count (protocol.py's
encoding). TLS uses the bench's dev certificates, the client trusting their CA. Every client channel
gets a local subchannel pool (`grpc.use_local_subchannel_pool`), so a new channel is a new TCP (and TLS)
connection, as a new client would open, not one shared from grpc's global pool.

Function API (peers/__init__.py): `serve(cert, key, variant)` ("h2c" or "tls") and `Client`. Other rows
(the typed services' reference) can use `serve`, `Client.call` and `Client.connect_first_reply` alone.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc

from aqueduct.bench.clients import Rate
from aqueduct.bench.protocol import decode_count, encode_count
from aqueduct.bench.tally import Tally

from .serve import Served

SERVICE = "aqueduct.bench.Peer"
CALL = f"/{SERVICE}/Call"
SINK = f"/{SERVICE}/Sink"
HOST = "127.0.0.1"
OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


async def serve(cert: str, key: str, variant: str) -> Served:
    """A grpc.aio server with `Call` and `Sink` on a free loopback port; `variant` "tls" or "h2c"."""
    tally = Tally()
    clients: set[str] = set()

    def seen(context: Any) -> None:
        peer = context.peer()  # "ipv4:127.0.0.1:PORT": one per client connection
        if peer not in clients:
            clients.add(peer)
            security = context.auth_context().get("transport_security_type", [b"none"])[0].decode()
            tally.connected((peer, security))  # (security "ssl": the connection is TLS, as the row's name says)

    async def call(request: bytes, context: Any) -> bytes:
        seen(context)
        tally.calls += 1
        return request

    async def sink(requests: AsyncIterator[bytes], context: Any) -> bytes:
        seen(context)
        n = 0
        async for _ in requests:
            n += 1
        tally.messages += n
        return encode_count(n)

    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler(SERVICE, {
        "Call": grpc.unary_unary_rpc_method_handler(call),
        "Sink": grpc.stream_unary_rpc_method_handler(sink),
    })
    server.add_generic_rpc_handlers((handler,))
    if variant == "tls":
        creds = grpc.ssl_server_credentials([(Path(key).read_bytes(), Path(cert).read_bytes())])
        port = server.add_secure_port(f"{HOST}:0", creds)
    else:
        port = server.add_insecure_port(f"{HOST}:0")
    await server.start()

    async def stop() -> None:
        await server.stop(None)

    return Served({"port": port, "tls": variant == "tls"}, stop, tally=tally)


class Client:
    """Calls on one channel (one HTTP/2 connection); new channels for connect and idle connections."""

    def __init__(self, info: dict[str, Any], ca: Path, variant: str = "") -> None:
        self.target = f"{HOST}:{info['port']}"
        self.creds = grpc.ssl_channel_credentials(root_certificates=ca.read_bytes()) if info["tls"] else None
        self.channel: Any = None
        self._call: Callable[[bytes], Awaitable[bytes]] | None = None

    def _channel(self) -> Any:
        if self.creds is None:
            return grpc.aio.insecure_channel(self.target, options=OPTIONS)
        return grpc.aio.secure_channel(self.target, self.creds, options=OPTIONS)

    async def open(self) -> None:
        """Open the channel and wait until it is connected."""
        self.channel = self._channel()
        await self.channel.channel_ready()
        self._call = self.channel.unary_unary(CALL)

    async def close(self) -> None:
        """Close the channel."""
        if self.channel is not None:
            await self.channel.close()

    async def call(self, body: bytes) -> bytes:
        """One unary call; the server answers with `body`."""
        assert self._call is not None
        return await self._call(body)

    async def oneway(self, size: int, window: float, limit: int) -> Rate:
        """A client stream of `size`-byte messages for `window` seconds (grpc's flow control paces `write`);
        the server answers the count when the stream ends."""
        stream = self.channel.stream_unary(SINK)()
        payload = b"x" * size
        start = time.perf_counter()
        deadline = start + window
        n = 0
        while n < limit:
            await stream.write(payload)
            n += 1
            if time.perf_counter() >= deadline:
                break
        await stream.done_writing()
        got = decode_count(await stream)
        return Rate(got, got * size, time.perf_counter() - start)

    async def connect_first_reply(self, zero_rtt: bool = False) -> float:
        """Seconds from a new channel to its first call's answer (TCP, then TLS 1.3 or not, then HTTP/2)."""
        start = time.perf_counter()
        channel = self._channel()
        await channel.unary_unary(CALL)(b"p")
        took = time.perf_counter() - start
        await channel.close()
        return took

    async def open_idle(self) -> Callable[[], Awaitable[None]]:
        """One more connection, used for one call, then idle; returns its close."""
        channel = self._channel()
        await channel.unary_unary(CALL)(b"p")
        close: Callable[[], Awaitable[None]] = channel.close
        return close
