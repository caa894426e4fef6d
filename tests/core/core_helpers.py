"""Helpers for scripted engine tests: a simulated pair, and a lone engine fed crafted bytes."""

from __future__ import annotations

from collections.abc import Sequence

from aqueduct.core.app import AppEvent
from aqueduct.core.config import EngineConfig
from aqueduct.core.engine import Engine
from aqueduct.core.transport import (
    CloseConnection,
    HandshakeCompleted,
    ResetStream,
    SendDatagram,
    SendStreamData,
    StreamDataReceived,
    TransportCommand,
)
from aqueduct.testing import NetConfig, Simulation
from aqueduct.wire.channel_id import Side
from aqueduct.wire.frames import ConnectionControl, Frame, Version, encode_frames
from aqueduct.wire.reader import decode_frames

CALM = NetConfig(one_way=0.01, jitter=0.0, chunk_gap=0.0, split_chunks=False)


def pair(
    net: NetConfig = CALM, *, seed: int = 1, client: EngineConfig | None = None, server: EngineConfig | None = None
) -> Simulation[Engine]:
    """A client and a server engine joined by the simulator, connected and idle."""
    sim = Simulation(Engine(Side.CLIENT, config=client), Engine(Side.SERVER, config=server), net, seed=seed)
    sim.run_until_idle()
    return sim


def of(events: Sequence[AppEvent], kind: type) -> list[AppEvent]:
    """The events of one type."""
    return [e for e in events if isinstance(e, kind)]


def hello() -> bytes:
    """What a client (or server) writes first on stream 0."""
    return encode_frames([Version(), ConnectionControl(())])


def server_ready(config: EngineConfig | None = None) -> Engine:
    """A server engine past the handshake and the client's headers, its commands drained."""
    e = Engine(Side.SERVER, config=config)
    e.handle_event(HandshakeCompleted(), 0.0)
    e.handle_event(StreamDataReceived(0, hello()), 0.0)
    e.commands()
    e.events()
    return e


def client_ready(config: EngineConfig | None = None) -> Engine:
    """A client engine that has the server's headers, its commands drained."""
    e = Engine(Side.CLIENT, config=config)
    e.handle_event(HandshakeCompleted(), 0.0)
    e.handle_event(StreamDataReceived(0, hello()), 0.0)
    e.commands()
    e.events()
    return e


def feed(e: Engine, stream_id: int, frames: Sequence[Frame], end: bool = False, now: float = 0.0) -> None:
    """Deliver frames on a stream."""
    e.handle_event(StreamDataReceived(stream_id, encode_frames(list(frames)), end), now)


def close_code(cmds: Sequence[TransportCommand]) -> int | None:
    """The code of the CloseConnection among `cmds`, if any."""
    closes = [c for c in cmds if isinstance(c, CloseConnection)]
    return closes[0].error_code if closes else None


def written(cmds: Sequence[TransportCommand], stream_id: int) -> list[Frame]:
    """Frames written on one stream (Version included)."""
    data = b"".join(c.data for c in cmds if isinstance(c, SendStreamData) and c.stream_id == stream_id)
    return decode_frames(data) if data else []


def resets(cmds: Sequence[TransportCommand]) -> dict[int, int]:
    """Stream ID -> reset code, for every ResetStream."""
    return {c.stream_id: c.error_code for c in cmds if isinstance(c, ResetStream)}


def datagrams(cmds: Sequence[TransportCommand]) -> list[list[Frame]]:
    """Decoded datagrams."""
    return [decode_frames(c.data) for c in cmds if isinstance(c, SendDatagram)]
