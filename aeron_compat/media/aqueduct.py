# aeron:udp carried by Aqueduct over QUIC: the transport of `Context.udp_media="aqueduct"`.  A served
# endpoint is an Aqueduct server; a dialled one is an Aqueduct connection whose client sends "hello"
# first, handing over the Sender that carries control messages back (aqueduct_link.py's `Link`).  A
# publication session travels as two channels, data and status, whose halves ride attached to its
# "setup" message (aqueduct_session.py).  TLS: the context's certificate, key and CA, else the user's
# shared development certificates.
"""`AqueductTransport`: the Aqueduct transport of the driver network."""

from __future__ import annotations

import contextlib
from typing import Any

from aqueduct.api import Connection, Receiver, Sender, channel, connect, serve

from ..client.context import Context
from .aqueduct_link import Link, dev_certs, peer_of
from .aqueduct_session import AqueductSession, AqueductSink
from .link import ControlLink, OnControl
from .transport import Listening


class AqueductTransport:
    """Aqueduct connections between drivers (implements `Transport`)."""

    sink_type = AqueductSink
    session_type = AqueductSession

    def __init__(self, ctx: Context) -> None:
        certs = dev_certs() if ctx.tls_cert is None else None
        self.cert = ctx.tls_cert or (certs.cert if certs else "")
        self.key = ctx.tls_key or (certs.key if certs else "")
        self.ca = ctx.tls_ca or (certs.ca if certs else None)
        self.settings = ctx.transport_settings

    async def listen(self, host: str, port: int, stack: contextlib.AsyncExitStack) -> Listening:
        """An Aqueduct server on `host:port`, closed with `stack`."""
        server = await stack.enter_async_context(serve(host, port, cert=self.cert, key=self.key,
                                                       settings=self.settings))
        return Listening(server.address[1], aiter(server))

    async def greet(self, peer: Connection[Any], on_control: OnControl, listener: str) -> ControlLink | None:
        """The link of a connection whose first message is a hello with the Sender back."""
        hello = await peer.entrypoint.recv()
        if not isinstance(hello, dict) or not isinstance(hello.get("back"), Sender):
            await peer.close()
            return None
        return Link(on_control, peer, hello["back"], peer.entrypoint, peer_of(peer), listener=listener)

    async def dial(self, host: str, port: int, endpoint: str, on_control: OnControl) -> ControlLink:
        """One connection to `endpoint` as a link (its hello queued)."""
        conn = await connect(f"aqueduct://{host}:{port}", ca=self.ca, settings=self.settings)
        back_tx, back_rx = channel()
        link = Link(on_control, conn, conn.entrypoint, back_rx, endpoint, endpoint=endpoint)
        link.send_ctl({"t": "hello", "back": back_tx})
        return link

    def check_setup(self, link: ControlLink, msg: dict[str, Any]) -> None:
        """A setup carries the data Receiver and the status Sender."""
        if not isinstance(msg.get("data"), Receiver) or not isinstance(msg.get("status"), Sender):
            raise ValueError("setup without channels")

    def refuse_setup(self, msg: dict[str, Any]) -> None:
        """Close both channels of a refused setup."""
        msg["data"].close()
        msg["status"].cancel()

    async def aclose(self) -> None:
        """Nothing beyond the listeners and links."""
