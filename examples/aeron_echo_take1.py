# The guide's first echo client and server, ported by renaming.  The client subscribes at its own
# endpoint, publishes to the server and sends "HELLO <port>", then numbers; the server learns each
# client from an image, opens a publication back to the image's source address at the port the
# client named, and echoes.  It shows the guide's weakness on purpose: the server connects *back*
# to the client, which a NAT in front of the client would refuse (see aeron_echo_response.py).
"""Echo "take 1": `python examples/aeron_echo_take1.py demo` runs a server and a client."""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _aeron_echo import send_message, string_poller
from _common import exit_with

from aeron_compat import Aeron, ChannelUriStringBuilder, Context, Header, Image, Publication

STREAM_ID = 0x2044F002
log = logging.getLogger("aeron_echo.take1")


def udp(host: str, port: int) -> str:
    """A reliable udp channel to/at host:port."""
    return ChannelUriStringBuilder().media("udp").reliable(True).endpoint(f"{host}:{port}").build()


class ServerClient:
    """Per-client state on the server: INITIAL until its HELLO, then CONNECTED with a publication back."""

    def __init__(self, aeron: Aeron, image: Image) -> None:
        self.aeron = aeron
        self.image = image
        self.publication: Publication | None = None

    def on_receive_message(self, text: str) -> None:
        """HELLO <port> opens the reply publication; anything after it is echoed."""
        if self.publication is None:
            word, _, port = text.partition(" ")
            if word != "HELLO" or not port.isdigit():
                log.warning("[%d] expected HELLO <port>, got %r", self.image.session_id, text)
                return
            host = self.image.source_identity.rpartition(":")[0]
            self.publication = self.aeron.add_publication(udp(host, int(port)), STREAM_ID)
            return
        send_message(self.publication, text, raise_on_failure=False)

    def close(self) -> None:
        """Close the reply publication."""
        if self.publication is not None:
            self.publication.close()


class EchoServer:
    """Subscribes at `host:port`; one ServerClient per image (client publication)."""

    def __init__(self, aeron: Aeron, host: str, port: int) -> None:
        self.aeron = aeron
        self.clients: dict[int, ServerClient] = {}
        self.subscription = aeron.add_subscription(udp(host, port), STREAM_ID, self.on_client_connected,
                                                   self.on_client_disconnected)
        self._poll = string_poller(self.subscription, self.on_message)

    def on_client_connected(self, image: Image) -> None:
        """A client's publication reached us."""
        log.debug("client connected: %d from %s", image.session_id, image.source_identity)
        self.clients[image.session_id] = ServerClient(self.aeron, image)

    def on_client_disconnected(self, image: Image) -> None:
        """A client's publication went away."""
        client = self.clients.pop(image.session_id, None)
        if client is not None:
            client.close()

    def on_message(self, text: str, header: Header) -> None:
        """Route a message to its client by session id."""
        client = self.clients.get(header.session_id)
        if client is not None:
            log.debug("receive [%d]: %s", header.session_id, text)
            client.on_receive_message(text)

    def do_work(self) -> int:
        """Poll once."""
        return self._poll()


class EchoClient:
    """Subscribes at its own `host:port`, publishes to the server, sends HELLO then numbers."""

    def __init__(self, aeron: Aeron, local_host: str, local_port: int, server_host: str, server_port: int) -> None:
        self.local_port = local_port
        self.subscription = aeron.add_subscription(udp(local_host, local_port), STREAM_ID)
        self.publication = aeron.add_publication(udp(server_host, server_port), STREAM_ID)
        self.responses: list[str] = []
        self.sent: list[str] = []
        self._poll = string_poller(self.subscription, lambda text, hdr: self.responses.append(text))

    def hello(self) -> None:
        """Tell the server where to answer."""
        send_message(self.publication, f"HELLO {self.local_port}")

    def send_number(self) -> str:
        """Send one random unsigned 32-bit number as text."""
        text = str(random.getrandbits(32))
        send_message(self.publication, text)
        self.sent.append(text)
        return text

    def do_work(self) -> int:
        """Poll for responses once."""
        return self._poll()


def demo(rounds: int, interval: float, media: str, port: int = 9000, client_port: int = 8000) -> int:
    """Server and client in one process (each with its own driver), over aeron:udp."""
    server_ctx, client_ctx = Context(udp_media=media), Context(udp_media=media)
    with Aeron.connect(server_ctx) as server_aeron, Aeron.connect(client_ctx) as client_aeron:
        server = EchoServer(server_aeron, "localhost", port)
        client = EchoClient(client_aeron, "localhost", client_port, "localhost", port)
        client.hello()
        for _ in range(rounds):
            print("send:", client.send_number())
            deadline = time.monotonic() + 5.0
            while len(client.responses) < len(client.sent) and time.monotonic() < deadline:
                if not server.do_work() + client.do_work():
                    time.sleep(0.001)
            print("response:", client.responses[-1] if client.responses else None)
            time.sleep(interval)
        return 0 if client.responses == client.sent else 1


def main(argv: list[str] | None = None) -> int:
    """`demo [--rounds N] [--interval S] [--media M] [--port P] [--client-port P]`."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["demo"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--media", choices=["loopback", "aqueduct"], default="loopback")
    parser.add_argument("--port", type=int, default=9000, help="the server's endpoint port")
    parser.add_argument("--client-port", type=int, default=8000, help="the client's endpoint port")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    return demo(args.rounds, args.interval, args.media, args.port, args.client_port)


if __name__ == "__main__":
    exit_with(main)
