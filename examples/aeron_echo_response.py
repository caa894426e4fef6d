# The echo service without the duologue dance.  The client subscribes with control-mode=response
# and tells its publication which subscription answers belong to (response-correlation-id); the
# server opens, for each image, a publication with control-mode=response that goes back the way
# the image came.  No ports are exchanged, the server never connects to the client, nothing needs
# a one-time pad: over Aqueduct the answers travel on the QUIC connection the client opened (one
# connection, encrypted, through any NAT that let the client out).  Limits and errors as in Echo 2.0:
# HELLO -> CONNECTED or ERROR (server full / too many connections for IP address); ECHO <text> ->
# ECHO <text>; anything else -> ERROR bad message and the server closes the reply channel.
"""Echo over response channels: `python examples/aeron_echo_response.py demo --clients 4`."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _aeron_echo import run_until, send_message, string_poller
from _common import exit_with

from aeron_compat import Aeron, ChannelUriStringBuilder, Context, Header, Image, Publication

STREAM_ID = 0x2044F003
log = logging.getLogger("aeron_echo.response")


@dataclass
class Peer:
    """A client as the server sees it: its address, its reply publication, whether it said HELLO."""

    owner: str
    reply: Publication
    admitted: bool = False


class EchoResponseServer:
    """One subscription; a response publication per image."""

    def __init__(self, aeron: Aeron, host: str, port: int, max_clients: int, max_per_ip: int) -> None:
        self.aeron, self.max_clients, self.max_per_ip = aeron, max_clients, max_per_ip
        self.sub = aeron.add_subscription(f"aeron:udp?endpoint={host}:{port}", STREAM_ID,
                                          self.on_image, self.on_image_gone)
        self.peers: dict[int, Peer] = {}
        self._poll = string_poller(self.sub, self.on_message)

    def on_image(self, image: Image) -> None:
        """A client arrived: open the reply channel that follows the image back."""
        reply = self.aeron.add_publication(
            ChannelUriStringBuilder().media("udp").control_mode("response")
            .response_correlation_id(image.correlation_id).build(), STREAM_ID)
        self.peers[image.session_id] = Peer(image.source_identity.rpartition(":")[0], reply)

    def on_image_gone(self, image: Image) -> None:
        """The client left."""
        peer = self.peers.pop(image.session_id, None)
        if peer is not None:
            peer.reply.close()

    def on_message(self, text: str, header: Header) -> None:
        """HELLO admits (within limits), ECHO echoes, anything else is an error."""
        peer = self.peers.get(header.session_id)
        if peer is None or peer.reply.is_closed:
            return
        if text == "HELLO" and not peer.admitted:
            admitted = [p for p in self.peers.values() if p.admitted]
            if len(admitted) >= self.max_clients:
                self.refuse(peer, "server full")
            elif sum(p.owner == peer.owner for p in admitted) >= self.max_per_ip:
                self.refuse(peer, "too many connections for IP address")
            else:
                peer.admitted = True
                send_message(peer.reply, "CONNECTED", raise_on_failure=False)
        elif text.startswith("ECHO ") and peer.admitted:
            send_message(peer.reply, text, raise_on_failure=False)
        else:
            self.refuse(peer, "bad message")

    @staticmethod
    def refuse(peer: Peer, why: str) -> None:
        """ERROR <why>, then close the reply channel."""
        send_message(peer.reply, f"ERROR {why}", raise_on_failure=False)
        peer.reply.close()

    def do_work(self) -> int:
        """Poll once."""
        return self._poll()


class EchoResponseClient:
    """A response subscription and a publication that names it."""

    def __init__(self, aeron: Aeron, host: str, port: int) -> None:
        self.sub = aeron.add_subscription(f"aeron:udp?control-mode=response|control={host}:{port}", STREAM_ID)
        self.pub = aeron.add_publication(
            f"aeron:udp?endpoint={host}:{port}|response-correlation-id={self.sub.registration_id}", STREAM_ID)
        self.responses: list[str] = []
        self._poll = string_poller(self.sub, lambda text, hdr: self.responses.append(text))
        self.hello_sent = False

    def do_work(self) -> int:
        """Say HELLO once connected, then poll for answers."""
        if not self.hello_sent and self.pub.is_connected:
            send_message(self.pub, "HELLO")
            self.hello_sent = True
        return self._poll()

    def send(self, text: str) -> None:
        """Send a raw line."""
        send_message(self.pub, text)


def demo(clients: int, max_clients: int, per_ip: int, media: str) -> int:
    """Server and clients in one process, each with its own driver."""
    with Aeron.connect(Context(udp_media=media)) as server_aeron:
        server = EchoResponseServer(server_aeron, "localhost", 9100, max_clients, per_ip)
        aerons = [Aeron.connect(Context(udp_media=media)) for _ in range(clients)]
        try:
            for i, aeron in enumerate(aerons):
                client = EchoResponseClient(aeron, "localhost", 9100)

                def step(c: EchoResponseClient = client) -> int:
                    return server.do_work() + c.do_work()

                run_until(step, lambda c=client: bool(c.responses))  # type: ignore[misc]
                if client.responses == ["CONNECTED"]:
                    client.send(f"ECHO hello from client {i}")
                    run_until(step, lambda c=client: len(c.responses) > 1)  # type: ignore[misc]
                print(f"client {i}: {client.responses}")
        finally:
            for aeron in aerons:
                aeron.close()
    return 0


def serve_forever(host: str, port: int, max_clients: int, per_ip: int, seconds: float) -> int:
    """The server alone, over Aqueduct, for `seconds` (0: until interrupted)."""
    with Aeron.connect(Context(udp_media="aqueduct")) as aeron:
        server = EchoResponseServer(aeron, host, port, max_clients, per_ip)
        print(f"echo (response channels) on {host}:{port}", flush=True)
        end = time.monotonic() + seconds if seconds else float("inf")
        run_until(server.do_work, lambda: time.monotonic() > end, seconds=float("inf"))
    return 0


def run_client(host: str, port: int, message: str) -> int:
    """HELLO, one ECHO, print the answers; exit 1 unless echoed."""
    with Aeron.connect(Context(udp_media="aqueduct")) as aeron:
        client = EchoResponseClient(aeron, host, port)
        run_until(client.do_work, lambda: bool(client.responses), seconds=15.0)
        if client.responses == ["CONNECTED"]:
            client.send(f"ECHO {message}")
            run_until(client.do_work, lambda: len(client.responses) > 1, seconds=10.0)
        print(" / ".join(client.responses) or "no answer", flush=True)
        return 0 if client.responses[-1:] == [f"ECHO {message}"] else 1


def main(argv: list[str] | None = None) -> int:
    """`demo`, `server` or `client` (server and client talk over Aqueduct/QUIC)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["demo", "server", "client"])
    parser.add_argument("--media", choices=["loopback", "aqueduct"], default="loopback", help="demo only")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--max-clients", type=int, default=4)
    parser.add_argument("--per-ip", type=int, default=3)
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=9100)
    parser.add_argument("--seconds", type=float, default=0.0, help="server: run this long (0: forever)")
    parser.add_argument("--message", default="hello")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.mode == "server":
        return serve_forever(args.host, args.port, args.max_clients, args.per_ip, args.seconds)
    if args.mode == "client":
        return run_client(args.host, args.port, args.message)
    return demo(args.clients, args.max_clients, args.per_ip, args.media)


if __name__ == "__main__":
    exit_with(main)
