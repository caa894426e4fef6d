"""The demo's second act: what the server does with peers that misbehave, one short scene each.

The demo server runs with small, visible limits (`SERVER_LIMITS`, `SERVER_SETTINGS`) so each scene ends
quickly and deterministically, and every failure family of the metrics endpoint counts something:

- a reader that stops early: the server streams a feed until its reader closes; what the reader never
  processed is nacked (the sender learns exactly which messages were not processed), and the server's
  next send raises ReceiverDropped;
- a greedy client: one message attaching more channels than `max_channels` closes that connection with
  LIMIT_EXCEEDED, and only that connection;
- one connection too many: with `max_connections_per_address` connections open from one address, the next
  one from there is dropped before its handshake and the client's `connect_timeout` names it;
- a wrong token: the server's `authenticate` callback (`check_token`: the demo's clients send
  `DEMO_TOKEN` in an `authorization` header) refuses it, and the client is closed with
  AUTHENTICATION_FAILED before anything it sent reaches the application.

`feed` is the server-side handler (registered in demo.py's HANDLERS); `run_scenes` is the client side.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

from ..api.connection import Connection
from ..api.endpoints import connect
from ..api.halves import Sender, channel
from ..core.config import EngineConfig
from ..errors import AqueductError, AuthenticationFailed, ConnectError, ReceiverDropped
from ..quic.mtls import PeerIdentity
from ..quic.settings import TransportSettings
from ..wire.errors import CloseCode
from ..wire.headers import Headers

MAX_CHANNELS = 64
"""The demo server's per-connection channel limit (the default is 100,000): the greedy client attaches more."""
PER_ADDRESS = 2
"""The demo server's connections per source address: the demo client and one more."""
SERVER_LIMITS = EngineConfig(max_channels=MAX_CHANNELS)
SERVER_SETTINGS = replace(TransportSettings(), max_connections_per_address=PER_ADDRESS)
DEMO_TOKEN = "Bearer demo-token"
"""What the demo's clients send in their `authorization` header (`connect(headers=AUTH)`)."""
AUTH = {"authorization": DEMO_TOKEN}


async def check_token(headers: Headers, _identity: PeerIdentity | None) -> str:
    """The demo server's `authenticate` callback: the client's token, or AuthenticationFailed."""
    token = next((v for k, v in headers if k == "authorization"), b"")
    if token != DEMO_TOKEN.encode():
        raise AuthenticationFailed("unknown token")
    return "demo client"


async def feed(req: dict[str, Any]) -> None:
    """Server: stream numbered ticks until the reader goes; report how many were sent."""
    sent = 0
    ticks: Sender[Any] = req["ticks"]
    with contextlib.suppress(ReceiverDropped):
        while True:
            await ticks.send(sent)
            sent += 1
    async with req["report"] as report:
        await report.send({"sent": sent})


async def run_scenes(url: str, ca: Any, conn: Connection[Any]) -> list[str]:
    """Client: play each scene against the demo server; one line per scene saying what happened."""
    lines = [await _early_reader(conn)]
    lines.append(await _greedy_client(url, ca))
    lines.append(await _one_too_many(url, ca))
    lines.append(await _wrong_token(url, ca))
    return lines


async def _early_reader(conn: Connection[Any]) -> str:
    ticks_tx, ticks_rx = channel()
    report_tx, report_rx = channel()
    await conn.entrypoint.send({"op": "feed", "ticks": ticks_tx, "report": report_tx})
    first = await ticks_rx.recv()
    ticks_rx.close()
    report = await report_rx.recv()
    return (f"early reader: read tick {first} and closed; the server had sent {report['sent']:,} ticks and "
            f"learned which were never processed (nacked), then ReceiverDropped")


async def _greedy_client(url: str, ca: Any) -> str:
    async with connect(url, ca=ca, headers=AUTH) as greedy:
        halves = [channel()[0] for _ in range(MAX_CHANNELS + 6)]
        with contextlib.suppress(AqueductError):
            await greedy.entrypoint.send({"op": "greedy", "halves": halves})
        closed = await greedy.wait_closed()
    code = CloseCode(closed.error_code).name if closed.error_code in CloseCode._value2member_map_ else "?"
    return (f"limits: a client attaching {len(halves)} channels in one message was closed with code "
            f"{closed.error_code} {code} ({closed.reason}); the demo connection went on")


async def _one_too_many(url: str, ca: Any) -> str:
    async with connect(url, ca=ca, headers=AUTH):
        try:
            extra = await connect(url, ca=ca, headers=AUTH, connect_timeout=0.5)
        except ConnectError as exc:
            return (f"admission: connection {PER_ADDRESS + 1} from one address was dropped before its handshake "
                    f"(max_connections_per_address={PER_ADDRESS}): {exc}")
        await extra.close()
        return "admission: connection {PER_ADDRESS + 1} was admitted (unexpected)"


async def _wrong_token(url: str, ca: Any) -> str:
    try:
        intruder = await connect(url, ca=ca, headers={"authorization": "Bearer guessed"})
    except AuthenticationFailed as exc:
        return f"authentication: a client with a wrong token was refused, code {exc.code} ({exc})"
    await intruder.close()
    return "authentication: a wrong token was accepted (unexpected)"
