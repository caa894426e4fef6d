"""Replay: choosing a recorded channel's messages, and sending them again to a live raw-codec server."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

import aqueduct
from aqueduct import Delivery
from aqueduct.api.codec import RawCodec, RawMessage
from aqueduct.cli import main
from aqueduct.quic.certs import DevCerts
from aqueduct.recording import Recorder, RecordingError
from aqueduct.recording.replay import plan, replay

GUARD = 20.0


def _record(path: Path, payloads: bool) -> None:
    with Recorder(path, payloads=payloads) as rec:
        tap = rec.connection("client", connection_id="c1")
        for n in range(5):
            tap.sent(4, n, Delivery.ORDERED, f"four-{n}".encode())
        tap.sent(4, 0, Delivery.UNRELIABLE, b"dgram")
        tap.sent(8, 0, Delivery.ORDERED, b"eight")
        tap.received(3, 0, Delivery.ORDERED, b"in-0")
        tap.received(3, 1, Delivery.ORDERED, b"in-1")


def test_plan_picks_the_busiest_channel_in_recorded_order(tmp_path: Path) -> None:
    _record(tmp_path, payloads=True)
    p = plan(tmp_path)
    assert (p.connection, p.channel) == ("c1", 4)
    assert [m.payload for m in p.messages] == [f"four-{n}".encode() for n in range(5)] + [b"dgram"]
    assert p.messages[-1].delivery is Delivery.UNRELIABLE
    offsets = [m.offset_s for m in p.messages]
    assert offsets[0] == 0.0 and offsets == sorted(offsets)
    assert [m.payload for m in plan(tmp_path, channel=8).messages] == [b"eight"]
    assert [m.payload for m in plan(tmp_path, direction="in").messages] == [b"in-0", b"in-1"]
    with pytest.raises(RecordingError):
        plan(tmp_path, connection="nope")


def test_without_payloads_replay_refuses_unless_zero_fill_is_asked_for(tmp_path: Path) -> None:
    _record(tmp_path, payloads=False)
    with pytest.raises(RecordingError, match=r"no payloads recorded .* --record-payloads"):
        plan(tmp_path, channel=8)
    p = plan(tmp_path, channel=8, zero_fill=True)
    assert p.messages[0].payload == bytes(5) and not p.messages[0].recorded_payload


def test_cli_refuses_a_recording_without_payloads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _record(tmp_path, payloads=False)
    assert main(["replay", str(tmp_path), "--to", "aqueduct://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no payloads recorded" in err and "--zero-fill" in err


def test_payloads_over_the_cap_are_not_kept(tmp_path: Path) -> None:
    with Recorder(tmp_path, payloads=True, payload_limit=4) as rec:
        tap = rec.connection("client", connection_id="c1")
        tap.sent(4, 0, Delivery.ORDERED, b"four")
        tap.sent(4, 1, Delivery.ORDERED, b"five!")
    with pytest.raises(RecordingError, match="1 of 2 messages"):
        plan(tmp_path)


async def test_connect_records_payloads_through_a_recorder(certs: DevCerts, tmp_path: Path) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, codec=RawCodec()) as server:
        host, port = server.address
        rec = Recorder(tmp_path, payloads=True, payload_limit=1024)
        async with aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca, codec=RawCodec(), record=rec) as conn:
            await conn.entrypoint.send(RawMessage(b"real bytes", []))
        await asyncio.to_thread(rec.close)
    assert [m.payload for m in plan(tmp_path).messages] == [b"real bytes"]



@pytest.mark.parametrize("paced", [False, True])
async def test_replay_delivers_every_message_in_order(certs: DevCerts, tmp_path: Path, paced: bool) -> None:
    _record(tmp_path, payloads=True)
    got: list[tuple[bytes, Delivery]] = []

    async def collect(conn: aqueduct.Connection) -> None:
        with contextlib.suppress(aqueduct.ConnectionLost):
            while True:
                msg = await conn.entrypoint.recv_message()
                assert isinstance(msg.value, RawMessage)
                got.append((msg.value.data, msg.delivery))

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, codec=RawCodec()) as server:
        tasks = set()

        async def accept() -> None:
            async for conn in server:
                tasks.add(asyncio.ensure_future(collect(conn)))

        acceptor = asyncio.ensure_future(accept())
        host, port = server.address
        the_plan = plan(tmp_path)
        sent = await asyncio.wait_for(
            replay(the_plan, f"aqueduct://{host}:{port}", paced=paced, speed=1000.0, ca=certs.ca), GUARD
        )
        acceptor.cancel()
    assert sent == 6
    reliable = [data for data, mode in got if mode is not Delivery.UNRELIABLE]
    assert reliable == [f"four-{n}".encode() for n in range(5)]
    assert {data for data, mode in got if mode is Delivery.UNRELIABLE} <= {b"dgram"}


def test_cli_reports_an_empty_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path), "--to", "aqueduct://127.0.0.1:1"]) == 2
    assert "aqueduct replay:" in capsys.readouterr().err


def test_cli_refuses_a_bad_target_before_reading_the_recording(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    _record(tmp_path, payloads=True)
    assert main(["replay", str(tmp_path), "--to", "http://127.0.0.1:4433"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no "replaying N messages" before the refusal
    assert err.count("\n") == 1 and "not an aqueduct://host:port URL: 'http://127.0.0.1:4433'" in err
    # the target is checked first: a missing recording is not even looked at
    assert main(["replay", str(tmp_path / "missing"), "--to", "aqueduct://127.0.0.1:99999"]) == 2
    assert "99999" in capsys.readouterr().err
