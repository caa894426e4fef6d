# The guide's "Echo 2.0", to its specification.  A client says HELLO <key> (a fresh random 32-bit
# one-time pad) on the all-clients channel; the server answers on its dynamic-MDC all-clients
# publication, prefixed by the client's session id, either "<sid> ERROR <why>" (server full, too
# many duologues for the client's IP) or "<sid> CONNECT <port> <control-port> <session ^ key>".
# A duologue is a publication/subscription pair on its own ports, restricted to a session id the
# server picked from the reserved range and sent only encrypted with the client's pad.  The client
# then talks ECHO <text> on the duologue; anything else ends it with "ERROR bad message".  The server
# expires duologues whose client never came or has gone, after a configurable time.
"""Echo 2.0: `python examples/aeron_echo2.py demo --clients 5` (the server's limits refuse some; the demo
says which limit: by default 3 per IP address, and every demo client is on the same address)."""

from __future__ import annotations

import argparse
import logging
import random
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _aeron_echo import run_until, send_message, string_poller
from _common import exit_with

from aeron_compat import Aeron, ChannelUriStringBuilder, Context, Header, Image, Publication, Subscription

STREAM_ID = 0x2044F002
RESERVED_SESSION_ID_LOW = 1
RESERVED_SESSION_ID_HIGH = 2**31 - 1
log = logging.getLogger("aeron_echo.echo2")
_random = random.SystemRandom()  # session ids and ports must be hard to guess


def echo_context(media: str = "loopback") -> Context:
    """Both sides leave the reserved range to the server's session allocator; `media` carries aeron:udp."""
    return Context(publication_reserved_session_id_low=RESERVED_SESSION_ID_LOW,
                   publication_reserved_session_id_high=RESERVED_SESSION_ID_HIGH, udp_media=media)


def channel(endpoint: str | None = None, control: str | None = None, session_id: int | None = None) -> str:
    """A reliable udp channel; with `control`, dynamic multi-destination-cast."""
    b = ChannelUriStringBuilder().media("udp").reliable(True).endpoint(endpoint).session_id(session_id)
    if control is not None:
        b.control(control).control_mode("dynamic")
    return b.build()


def to_int32(n: int) -> int:
    """An unsigned 32-bit value as the signed session id it encodes."""
    return n - 2**32 if n >= 2**31 else n


@dataclass
class EchoServerConfiguration:
    """Where the server listens and its limits."""

    host: str = "localhost"
    port: int = 9000
    control_port: int = 9001
    base_port: int = 9010
    max_clients: int = 4
    max_duologues_per_ip: int = 3
    expiry_seconds: float = 10.0


class PortAllocator:
    """Random ports from [base, base + count), none reused until freed."""

    def __init__(self, base: int, count: int) -> None:
        self.free = list(range(base, base + count))

    def allocate(self) -> int:
        """A free port (IndexError when none is left)."""
        return self.free.pop(_random.randrange(len(self.free)))

    def release(self, port: int) -> None:
        """Give `port` back."""
        self.free.append(port)


class SessionAllocator:
    """Random session ids from the reserved range, none reused until freed."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self.used: set[int] = set()

    def allocate(self) -> int:
        """A fresh session id."""
        while True:
            candidate = _random.randint(self.low, self.high)
            if candidate not in self.used:
                self.used.add(candidate)
                return candidate

    def release(self, session_id: int) -> None:
        """Give `session_id` back."""
        self.used.discard(session_id)


@dataclass
class Duologue:
    """One client's private publication (t) and subscription (u), owned by an IP address."""

    owner: str
    session_id: int
    port: int
    control_port: int
    pub: Publication
    sub: Subscription
    last_active: float
    poll: Callable[[], int] = field(default=lambda: 0)
    closed: bool = False

    def close(self) -> None:
        """Close t and u."""
        self.closed = True
        self.pub.close()
        self.sub.close()


class EchoServer:
    """The all-clients channel, the duologue list and its limits; single-threaded (call do_work)."""

    def __init__(self, aeron: Aeron, config: EchoServerConfiguration, clock: Callable[[], float] = time.monotonic):
        self.aeron, self.config, self.clock = aeron, config, clock
        host = config.host
        self.all_clients_pub = aeron.add_publication(channel(control=f"{host}:{config.control_port}"), STREAM_ID)
        self.all_clients_sub = aeron.add_subscription(channel(endpoint=f"{host}:{config.port}"), STREAM_ID,
                                                      self.on_initial_client_connected,
                                                      self.on_initial_client_disconnected)
        self.addresses: dict[int, str] = {}
        self.duologues: list[Duologue] = []
        self.ports = PortAllocator(config.base_port, 2 * config.max_clients)
        self.sessions = SessionAllocator(RESERVED_SESSION_ID_LOW, RESERVED_SESSION_ID_HIGH)
        self._poll_initial = string_poller(self.all_clients_sub, self.on_initial_client_message)

    # --- the all-clients channel ------------------------------------------------------------------
    def on_initial_client_connected(self, image: Image) -> None:
        """Remember the IP address behind a session of the all-clients channel."""
        self.addresses[image.session_id] = image.source_identity.rpartition(":")[0]
        log.debug("[%d] initial client connected (%s)", image.session_id, image.source_identity)

    def on_initial_client_disconnected(self, image: Image) -> None:
        """Forget it."""
        self.addresses.pop(image.session_id, None)

    def on_initial_client_message(self, text: str, header: Header) -> None:
        """HELLO <key>: refuse with ERROR, or allocate a duologue and answer CONNECT."""
        sid = header.session_id
        word, _, key_text = text.partition(" ")
        try:
            key = int(key_text, 16) if word == "HELLO" else -1
        except ValueError:
            key = -1
        if not 0 <= key < 2**32:
            self.reply(f"{sid} ERROR bad message")
            return
        owner = self.addresses.get(sid, "")
        if len(self.duologues) >= self.config.max_clients:
            self.reply(f"{sid} ERROR server full")
            return
        if sum(d.owner == owner for d in self.duologues) >= self.config.max_duologues_per_ip:
            self.reply(f"{sid} ERROR too many connections for IP address")
            return
        duologue = self.allocate_duologue(owner)
        encrypted = (duologue.session_id ^ key) & 0xFFFFFFFF
        self.reply(f"{sid} CONNECT {duologue.port} {duologue.control_port} {encrypted:08X}")

    def reply(self, text: str) -> None:
        """Broadcast on the all-clients publication."""
        send_message(self.all_clients_pub, text, raise_on_failure=False)

    # --- duologues ---------------------------------------------------------------------------------
    def allocate_duologue(self, owner: str) -> Duologue:
        """Ports, a reserved session id, and the pair of channels restricted to it."""
        host = self.config.host
        port, control_port = self.ports.allocate(), self.ports.allocate()
        session_id = self.sessions.allocate()
        pub = self.aeron.add_exclusive_publication(
            channel(control=f"{host}:{control_port}", session_id=session_id), STREAM_ID)
        sub = self.aeron.add_subscription(channel(endpoint=f"{host}:{port}", session_id=session_id), STREAM_ID)
        duologue = Duologue(owner, session_id, port, control_port, pub, sub, self.clock())
        duologue.poll = string_poller(sub, lambda text, hdr: self.on_duologue_message(duologue, text, hdr))
        self.duologues.append(duologue)
        log.debug("created duologue %d at %d/%d for %s", session_id, port, control_port, owner)
        return duologue

    def on_duologue_message(self, duologue: Duologue, text: str, header: Header) -> None:
        """ECHO <text> is echoed; anything else ends the duologue."""
        image = duologue.sub.image_by_session_id(header.session_id)
        if image is None or image.source_identity.rpartition(":")[0] != duologue.owner:
            return
        if text.startswith("ECHO "):
            send_message(duologue.pub, text, raise_on_failure=False)
            return
        send_message(duologue.pub, "ERROR bad message", raise_on_failure=False)
        self.delete_duologue(duologue)

    def delete_duologue(self, duologue: Duologue) -> None:
        """Close its channels and free its ports and session id."""
        if duologue in self.duologues:
            self.duologues.remove(duologue)
        duologue.close()
        self.ports.release(duologue.port)
        self.ports.release(duologue.control_port)
        self.sessions.release(duologue.session_id)

    def expire(self) -> None:
        """Delete duologues nobody has subscribed to for `expiry_seconds`."""
        now = self.clock()
        for duologue in list(self.duologues):
            if duologue.pub.is_connected:
                duologue.last_active = now
            elif now - duologue.last_active >= self.config.expiry_seconds:
                log.debug("duologue %d expired", duologue.session_id)
                self.delete_duologue(duologue)

    def do_work(self) -> int:
        """Poll the all-clients channel and every duologue once, then expire."""
        work = self._poll_initial()
        for duologue in list(self.duologues):
            if not duologue.closed:
                work += duologue.poll()
        self.expire()
        return work

    def close(self) -> None:
        """Delete every duologue."""
        for duologue in list(self.duologues):
            self.delete_duologue(duologue)


class EchoClientRejected(Exception):
    """The server answered ERROR."""


class EchoClient:
    """HELLO on the all-clients channel, then ECHO on the duologue; a state machine driven by do_work.

    States: HELLO (waiting to be connected) -> WAIT (HELLO sent) -> JOIN (duologue opened, waiting to be
    connected) -> ECHO; FAILED on ERROR or timeout.
    """

    def __init__(self, aeron: Aeron, server_host: str, port: int, control_port: int, local_host: str = "localhost",
                 timeout: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.aeron, self.server_host, self.local_host = aeron, server_host, local_host
        self.clock, self.timeout = clock, timeout
        self.pub = aeron.add_publication(channel(endpoint=f"{server_host}:{port}"), STREAM_ID)
        self.sub = aeron.add_subscription(
            channel(endpoint=f"{local_host}:0", control=f"{server_host}:{control_port}"), STREAM_ID)
        self.key = secrets.randbits(32)  # a fresh one-time pad for every connection attempt
        self.state = "HELLO"
        self.error: str | None = None
        self.responses: list[str] = []
        self.duologue_pub: Publication | None = None
        self.duologue_sub: Subscription | None = None
        self._deadline = clock() + timeout
        self._poll = string_poller(self.sub, self.on_initial_response)

    def do_work(self) -> int:
        """One step: send HELLO once connected, wait for the answer, then poll the duologue."""
        if self.state == "HELLO":
            if self.pub.is_connected and self.sub.is_connected:
                send_message(self.pub, f"HELLO {self.key:08X}")
                self.state = "WAIT"
            elif self.clock() > self._deadline:
                self.fail("could not reach the server")
            return 0
        if self.state == "JOIN":
            assert self.duologue_pub is not None and self.duologue_sub is not None
            if self.duologue_pub.is_connected and self.duologue_sub.is_connected:
                self.state = "ECHO"
        if self.state in ("WAIT", "JOIN") and self.clock() > self._deadline:
            self.fail("no response from the server" if self.state == "WAIT" else "could not join the duologue")
        return self._poll() if self.state in ("WAIT", "JOIN", "ECHO") else 0

    def fail(self, why: str) -> None:
        """Log, record and stop (the demo and `client` print the reason themselves)."""
        log.info("[%d] %s", self.pub.session_id, why)
        self.error = why
        self.state = "FAILED"

    def on_initial_response(self, text: str, header: Header) -> None:
        """<sid> ERROR ... / <sid> CONNECT port control-port encrypted, for our session only."""
        parts = text.split(" ")
        if self.state != "WAIT" or len(parts) < 2 or parts[0] != str(self.pub.session_id):
            return
        if parts[1] == "ERROR":
            self.fail("server returned an error: " + " ".join(parts[2:]))
            return
        if parts[1] != "CONNECT" or len(parts) != 5:
            return
        port, control_port, encrypted = int(parts[2]), int(parts[3]), int(parts[4], 16)
        session_id = to_int32(encrypted ^ self.key)
        host = self.server_host
        self.duologue_sub = self.aeron.add_subscription(
            channel(endpoint=f"{self.local_host}:0", control=f"{host}:{control_port}", session_id=session_id),
            STREAM_ID)
        self.duologue_pub = self.aeron.add_publication(
            channel(endpoint=f"{host}:{port}", session_id=session_id), STREAM_ID)
        self.pub.close()
        self.sub.close()
        self._poll = string_poller(self.duologue_sub, self.on_echo_response)
        self._deadline = self.clock() + self.timeout
        self.state = "JOIN"

    def send_echo(self, text: str) -> None:
        """ECHO <text> on the duologue."""
        if self.duologue_pub is None:
            raise RuntimeError("not connected to a duologue")
        send_message(self.duologue_pub, f"ECHO {text}")

    def send_raw(self, text: str) -> None:
        """Anything at all on the duologue (to see the server's ERROR)."""
        if self.duologue_pub is None:
            raise RuntimeError("not connected to a duologue")
        send_message(self.duologue_pub, text)

    def on_echo_response(self, text: str, header: Header) -> None:
        """ECHO <text> is kept; ERROR ends the client."""
        if text.startswith("ERROR "):
            self.fail(text[len("ERROR "):])
        else:
            self.responses.append(text.removeprefix("ECHO "))

    def close(self) -> None:
        """Close whatever is open."""
        for resource in (self.pub, self.sub, self.duologue_pub, self.duologue_sub):
            if resource is not None:
                resource.close()


def refusal_reason(error: str, config: EchoServerConfiguration) -> str:
    """Why the server refused a demo client, in the demo's terms (its limits, one address for every client)."""
    if error.endswith("too many connections for IP address"):
        return (f"{error}: the server allows {config.max_duologues_per_ip} per IP address (--per-ip) "
                "and every demo client comes from the same one")
    if error.endswith("server full"):
        return f"{error}: the server allows {config.max_clients} clients at once (--max-clients)"
    return error


def demo(clients: int, max_clients: int, per_ip: int, media: str) -> int:
    """A server and `clients` clients in one process (each with its own driver), one after another: the
    server's limits refuse the clients beyond them, which the demo shows and explains."""
    config = EchoServerConfiguration(max_clients=max_clients, max_duologues_per_ip=per_ip)
    limit = min(max_clients, per_ip)
    beyond = f", so those beyond the first {limit} are refused" if clients > limit else ""
    print(f"echo server: at most {max_clients} clients (--max-clients) and {per_ip} per IP address (--per-ip); "
          f"{clients} clients from one address{beyond}", flush=True)
    with Aeron.connect(echo_context(media)) as server_aeron:
        server = EchoServer(server_aeron, config)
        aerons = [Aeron.connect(echo_context(media)) for _ in range(clients)]
        try:
            for i, aeron in enumerate(aerons):
                client = EchoClient(aeron, "localhost", config.port, config.control_port)

                def step(c: EchoClient = client) -> int:
                    return server.do_work() + c.do_work()

                run_until(step, lambda c=client: c.state in ("ECHO", "FAILED"))  # type: ignore[misc]
                if client.state == "ECHO":
                    client.send_echo(f"hello from client {i}")
                    run_until(step, lambda c=client: bool(c.responses))  # type: ignore[misc]
                if client.error:
                    print(f"client {i}: refused: {refusal_reason(client.error, config)}", flush=True)
                else:
                    print(f"client {i}: {client.state} {client.responses}", flush=True)
        finally:
            for aeron in aerons:
                aeron.close()
            server.close()
    return 0


def serve_forever(config: EchoServerConfiguration, seconds: float) -> int:
    """The server alone, over Aqueduct, for `seconds` (0: until interrupted)."""
    with Aeron.connect(echo_context("aqueduct")) as aeron:
        server = EchoServer(aeron, config)
        print(f"echo server on {config.host}:{config.port} (control {config.control_port})", flush=True)
        end = time.monotonic() + seconds if seconds else float("inf")
        run_until(server.do_work, lambda: time.monotonic() > end, seconds=float("inf"))
        server.close()
    return 0


def run_client(host: str, port: int, control_port: int, message: str) -> int:
    """One client over Aqueduct: HELLO, one ECHO, print the answer; exit 1 on ERROR or timeout."""
    with Aeron.connect(echo_context("aqueduct")) as aeron:
        client = EchoClient(aeron, host, port, control_port, timeout=10.0)
        run_until(client.do_work, lambda: client.state in ("ECHO", "FAILED"), seconds=15.0)
        if client.state == "ECHO":
            client.send_echo(message)
            run_until(client.do_work, lambda: bool(client.responses) or client.state == "FAILED", seconds=10.0)
        print(client.responses[0] if client.responses else f"ERROR {client.error}", flush=True)
        client.close()
        return 0 if client.responses else 1


def main(argv: list[str] | None = None) -> int:
    """`demo`, `server` or `client` (server and client talk over Aqueduct/QUIC)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["demo", "server", "client"])
    parser.add_argument("--media", choices=["loopback", "aqueduct"], default="loopback", help="demo only")
    parser.add_argument("--clients", type=int, default=5)
    parser.add_argument("--max-clients", type=int, default=4)
    parser.add_argument("--per-ip", type=int, default=3)
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--control-port", type=int, default=9001)
    parser.add_argument("--base-port", type=int, default=9010)
    parser.add_argument("--seconds", type=float, default=0.0, help="server: run this long (0: forever)")
    parser.add_argument("--message", default="hello")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.mode == "server":
        config = EchoServerConfiguration(args.host, args.port, args.control_port, args.base_port, args.max_clients,
                                         args.per_ip)
        return serve_forever(config, args.seconds)
    if args.mode == "client":
        return run_client(args.host, args.port, args.control_port, args.message)
    return demo(args.clients, args.max_clients, args.per_ip, args.media)


if __name__ == "__main__":
    exit_with(main)
