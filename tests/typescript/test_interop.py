"""The TypeScript client against the Python engine: two implementations, one connection.

The client is clients/typescript/test/interop/client.ts run by node: its engine's transport is the process's stdio
(one JSON object a line: its commands out, transport events in). Here the Python engine (`Engine(Side.SERVER)`)
is the server, its commands relayed to the client and the client's to it, stream IDs 1:1 (both number streams as
QUIC does); a small server application on the raw engine answers the client's script: a stream on a sender the
client handed over, a request's oneshot reply, a channel the server makes inside its reply, and datagrams on an
unreliable channel the client hands over, counted. The browser test (tests/browser/) runs the same client over
WebTransport; this one needs no browser and checks the engines against each other frame for frame."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from pathlib import Path
from typing import Any

import cbor2
import pytest

from aqueduct.core.app import (
    AttachKind,
    Attachment,
    HeadersReceived,
    MessageAvailable,
    ReceiverEnded,
)
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
)
from aqueduct.errors import EndReason
from aqueduct.wire.channel_id import Side
from tests.typescript.npm import installed, npm

ATTACHMENT = 24945


class Server:
    """The server application, on the raw engine: what the client's script asks for."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.tallies: dict[int, tuple[int, int]] = {}
        """Receiver handle -> (messages counted, the reply sender to answer on when it finishes)."""

    def decode(self, payload: bytes, attachments: tuple[Attachment, ...]) -> Any:
        def halves(tag: cbor2.CBORTag, _immutable: bool) -> Any:
            return attachments[tag.value] if tag.tag == ATTACHMENT else tag

        return cbor2.loads(payload, tag_hook=halves)

    def on_events(self) -> None:
        e = self.engine
        for ev in e.events():
            if isinstance(ev, HeadersReceived):
                continue
            if isinstance(ev, MessageAvailable):
                while (d := e.take_message(ev.receiver)) is not None:
                    if ev.receiver in self.tallies:
                        count, reply = self.tallies[ev.receiver]
                        self.tallies[ev.receiver] = (count + 1, reply)
                    else:
                        self.on_call(self.decode(d.payload, d.attachments))
            elif isinstance(ev, ReceiverEnded) and ev.receiver in self.tallies:
                count, reply = self.tallies.pop(ev.receiver)
                assert ev.reason is EndReason.FINISHED
                e.send(reply, cbor2.dumps(count))

    def on_call(self, call: dict[str, Any]) -> None:
        e = self.engine
        if call["op"] == "count":
            sink = call["sink"].handle
            for i in range(call["upto"]):
                e.send(sink, cbor2.dumps(i))
            e.finish(sink)
        elif call["op"] == "add":
            e.send(call["reply"].handle, cbor2.dumps(call["a"] + call["b"]))
        elif call["op"] == "hand":
            made = e.send(call["reply"].handle, cbor2.dumps({"feed": cbor2.CBORTag(ATTACHMENT, 0)}),
                          attach=[AttachKind.RECEIVER])
            feed = made.created[0]
            e.send(feed, cbor2.dumps("one"))
            e.send(feed, cbor2.dumps("two"))
            e.finish(feed)
        elif call["op"] == "tally":
            self.tallies[call["source"].handle] = (0, call["reply"].handle)
        else:
            raise AssertionError(f"unknown op {call}")


def to_client(cmd: Any) -> dict[str, Any] | None:
    """A server engine command as the client's transport event (None: nothing the client sees)."""
    if isinstance(cmd, SendStreamData):
        return {"type": "stream_data", "streamId": cmd.stream_id, "data": cmd.data.hex(), "end": cmd.end_stream}
    if isinstance(cmd, ResetStream):
        return {"type": "stream_reset", "streamId": cmd.stream_id, "code": int(cmd.error_code)}
    if isinstance(cmd, SendDatagram):
        return {"type": "datagram", "data": cmd.data.hex()}
    if isinstance(cmd, CloseConnection):
        return {"type": "closed", "code": int(cmd.error_code), "reason": cmd.reason_phrase}
    return None  # GrantCredit: QUIC flow control, which the relay does not model


def to_server(msg: dict[str, Any]) -> Any:
    """A client command as the server engine's transport event (None: a command only the client's transport uses)."""
    kind = msg["type"]
    if kind == "send":
        return StreamDataReceived(msg["streamId"], bytes.fromhex(msg["data"]), msg["end"])
    if kind == "reset":
        return StreamReset(msg["streamId"], msg["code"])
    if kind == "datagram":
        return DatagramReceived(bytes.fromhex(msg["data"]))
    return None  # pause/resume: the client's own flow control; close: handled by the caller


@pytest.mark.timeout(240)
def test_typescript_client_against_the_python_engine(tmp_path: Path) -> None:
    package = installed()
    client = tmp_path / "client.mjs"  # (one file of its own: other tests rebuild build/ meanwhile)
    built = npm("exec", "--", "esbuild", "test/interop/client.ts", "--bundle", "--platform=node", "--format=esm",
                f"--outfile={client}", "--log-level=warning")
    assert built.returncode == 0, built.stdout + built.stderr
    engine = Engine(Side.SERVER)
    server = Server(engine)
    start = time.monotonic()
    engine.handle_event(HandshakeCompleted(), 0.0)
    proc = subprocess.Popen(["node", "--expose-gc", str(client)], cwd=package, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None
    out_fd = proc.stdout.fileno()  # (read raw: a buffered reader would hide lines from select)
    selector = selectors.DefaultSelector()
    selector.register(out_fd, selectors.EVENT_READ)
    pending = b""
    result: Any = None
    closed_by_client = False
    try:
        while result is None or not closed_by_client:
            now = time.monotonic() - start
            deadline = engine.next_deadline()
            if deadline is not None and deadline <= now:
                engine.handle_timer(now)
            else:
                wait = 1.0 if deadline is None else min(1.0, deadline - now)
                if selector.select(timeout=wait):
                    chunk = os.read(out_fd, 1 << 16)
                    assert chunk, "the client exited early"
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        msg = json.loads(line)
                        assert "error" not in msg, msg.get("error")
                        if "result" in msg:
                            result = msg["result"]
                        elif msg["type"] == "close":
                            closed_by_client = True
                            assert msg["code"] == 0
                        elif (event := to_server(msg)) is not None:
                            engine.handle_event(event, time.monotonic() - start)
            assert time.monotonic() - start < 120, "the exchange did not complete"
            server.on_events()
            for cmd in engine.commands():
                out = to_client(cmd)
                if out is not None:
                    proc.stdin.write(json.dumps(out) + "\n")
            assert not engine.closed, "the server engine closed the connection (a protocol error)"
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    sizes = result.pop("sizes")
    assert result == {"counted": [0, 1, 2], "sum": 5, "fed": ["one", "two"], "tallied": 5}
    # what the client's engine holds once the exchange's halves were collected: the entrypoint sender and its
    # streams (the connection's, its message stream and its control stream), and the bounded ghost filters
    assert {k: sizes[k] for k in ("senders", "receivers", "unclaimed", "links", "timers")} == \
        {"senders": 1, "receivers": 0, "unclaimed": 0, "links": 0, "timers": 0}, sizes
    assert sizes["streams"] <= 2, sizes
