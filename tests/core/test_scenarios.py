"""The shared engine scenarios of specs/scenarios/ against the Python engine (the TypeScript engine runs the same
files in clients/typescript/test/scenarios.test.ts): one client engine fed the server's frames, checked for what it
writes, resets and reports. specs/scenarios/README.md describes the format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aqueduct.core.app import (
    AppEvent,
    AttachKind,
    Delivery,
    MessageAvailable,
    MessagesAcked,
    MessagesNacked,
    ReceiverEnded,
    SenderEnded,
)
from aqueduct.core.config import EngineConfig
from aqueduct.core.engine import Engine
from aqueduct.core.transport import (
    CloseConnection,
    DatagramReceived,
    HandshakeCompleted,
    ResetStream,
    SendDatagram,
    SendStreamData,
    StreamDataReceived,
    StreamReset,
    TransportCommand,
)
from aqueduct.wire.channel_id import Side
from aqueduct.wire.frames import ConnectionControl, Version, encode_frames
from aqueduct.wire.reader import decode_frames
from aqueduct.wire.vectors import frames_from_json, frames_to_json

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "specs" / "scenarios").glob("*.json"))


class Run:
    """One scenario being played against a client engine."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.engine = Engine(Side.CLIENT, config=EngineConfig(**config))
        self.now = 0.0
        self.engine.handle_event(HandshakeCompleted(), 0.0)
        self.engine.handle_event(StreamDataReceived(0, encode_frames([Version(), ConnectionControl(())])), 0.0)
        self.engine.commands()
        self.engine.events()
        entry = self.engine.entrypoint
        assert entry is not None
        self.handles: dict[str, int] = {"entry": entry}
        self.names: dict[int, str] = {entry: "entry"}
        self.commands: list[TransportCommand] = []
        self.events: list[AppEvent] = []

    def name(self, name: str, handle: int) -> None:
        self.handles[name] = handle
        self.names[handle] = name

    def drain(self) -> None:
        self.commands += self.engine.commands()
        self.events += self.engine.events()

    def step(self, step: dict[str, Any]) -> None:
        e, h = self.engine, self.handles
        if "send" in step:
            attach = step.get("attach", [])
            result = e.send(h[step["send"]], bytes.fromhex(step.get("payload", "")),
                            attach=[AttachKind(a["kind"]) for a in attach],
                            delivery=Delivery(step.get("delivery", "ordered")), now=self.now)
            for a, created in zip(attach, result.created, strict=True):
                self.name(a["name"], created)
        elif "finish" in step:
            e.finish(h[step["finish"]], now=self.now)
        elif "cancel" in step:
            e.cancel(h[step["cancel"]], now=self.now)
        elif "close_receiver" in step:
            e.close_receiver(h[step["close_receiver"]], now=self.now)
        elif "drop_sender" in step:
            e.drop_sender(h[step["drop_sender"]], now=self.now)
        elif "drop_receiver" in step:
            e.drop_receiver(h[step["drop_receiver"]], now=self.now)
        elif "take" in step:
            d = e.take_message(h[step["take"]], now=self.now)
            if step["payload"] is None:
                assert d is None
            else:
                assert d is not None and d.payload.hex() == step["payload"]
                want = step.get("attachments", [])
                assert [a.is_sender for a in d.attachments] == [w["is_sender"] for w in want]
                for w, a in zip(want, d.attachments, strict=True):
                    self.name(w["name"], a.handle)
        elif "peer" in step:
            data = encode_frames(frames_from_json(step["frames"])) if step["frames"] else b""
            e.handle_event(StreamDataReceived(step["peer"], data, step.get("end", False)), self.now)
        elif "peer_reset" in step:
            e.handle_event(StreamReset(step["peer_reset"], step["code"]), self.now)
        elif "peer_datagram" in step:
            e.handle_event(DatagramReceived(encode_frames(frames_from_json(step["peer_datagram"]))), self.now)
        elif "time" in step:
            self.now = float(step["time"])
            e.handle_timer(self.now)
        elif "expect" in step:
            self.drain()
            self.check(step["expect"])
            self.commands, self.events = [], []
            return
        else:
            raise ValueError(f"unknown step {step}")
        self.drain()

    def event_json(self, ev: AppEvent) -> dict[str, Any] | None:
        n = self.names
        match ev:
            case MessagesAcked(sender, reliable, first, stop):
                return {"acked": n[sender], "reliable": reliable, "first": first, "stop": stop}
            case MessagesNacked(sender, reliable, first, stop):
                return {"nacked": n[sender], "reliable": reliable, "first": first, "stop": stop}
            case SenderEnded(sender, reason):
                return {"sender_ended": n[sender], "reason": reason.value}
            case ReceiverEnded(receiver, reason):
                return {"receiver_ended": n[receiver], "reason": reason.value}
            case MessageAvailable(receiver):
                return {"message_available": n[receiver]}
        return None

    def check(self, want: dict[str, Any]) -> None:
        cmds = self.commands
        if "written" in want:
            streams: dict[int, bytes] = {}
            for c in cmds:
                if isinstance(c, SendStreamData):
                    streams[c.stream_id] = streams.get(c.stream_id, b"") + c.data
            got = {str(sid): frames_to_json(decode_frames(data)) for sid, data in streams.items() if data}
            assert got == want["written"]
        if "ends" in want:
            assert sorted(c.stream_id for c in cmds if isinstance(c, SendStreamData) and c.end_stream) == \
                sorted(want["ends"])
        if "resets" in want:
            assert {str(c.stream_id): c.error_code for c in cmds if isinstance(c, ResetStream)} == want["resets"]
        if "datagrams" in want:
            assert [frames_to_json(decode_frames(c.data)) for c in cmds if isinstance(c, SendDatagram)] == \
                want["datagrams"]
        if "close" in want:
            closes = [c.error_code for c in cmds if isinstance(c, CloseConnection)]
            assert (closes[0] if closes else None) == want["close"]
        if "events" in want:
            got_events = [j for j in map(self.event_json, self.events) if j is not None]
            assert got_events == want["events"]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    doc = json.loads(path.read_text())
    run = Run(doc.get("config", {}))
    for i, step in enumerate(doc["steps"]):
        try:
            run.step(step)
        except AssertionError as exc:
            raise AssertionError(f"{path.name} step {i}: {json.dumps(step)}\n{exc}") from exc


def test_there_are_scenarios() -> None:
    assert len(SCENARIOS) >= 8
