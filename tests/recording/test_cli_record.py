"""`aqueduct demo --record DIR` records both sides, and the recording agrees with the demo's own summary."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from aqueduct.recording import read_events


def test_demo_records_both_sides(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    command = Path(sys.executable).with_name("aqueduct")
    result = subprocess.run([str(command), "demo", "--record", str(rec), "--record-payloads", "--payload-limit", "600"],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"aqueduct analyze {rec}" in result.stdout
    sent, received = (
        int(x) for x in re.search(r"client sent (\d+) messages .* received (\d+)", result.stdout).groups()
    )
    events = read_events(rec)
    opened = [e for e in events if e["kind"] == "connection_opened"]
    assert {e["detail"].split()[0] for e in opened} == {"client", "server"}
    sides: dict[str, str] = {}  # the demo's own connection on each side: the first one opened there
    for e in opened:
        sides.setdefault(e["detail"].split()[0], e["connection"])
    client = [e for e in events if e["connection"] == sides["client"]]
    assert sum(e["kind"] == "message_sent" for e in client) == sent
    assert sum(e["kind"] == "message_received" for e in client) == received
    # payloads kept up to the cap (the upload's 512 B chunks, serialized, are in), each its row's length
    messages = [e for e in events if e["kind"] in ("message_sent", "message_received")]
    assert all(e["payload"] is not None for e in messages if e["length"] <= 600)
    assert all(len(e["payload"]) == e["length"] for e in messages if e["payload"] is not None)
    assert any(e["length"] > 512 for e in messages if e["payload"] is not None)
    server = [e for e in events if e["connection"] == sides["server"]]
    cancelled = {e["channel"] for e in server if e["kind"] == "channel_cancelled"}
    assert len(cancelled) == 1  # the upload the client cancels
    closed_early = {e["channel"] for e in server if e["kind"] == "nacked"}
    assert len(closed_early) == 1  # the feed whose reader stops early (its unread messages are nacked)
    cancelled |= closed_early

    def ordered(rows: list[dict[str, object]], kind: str) -> set[tuple[object, object]]:
        # a receiving side records reliable messages as `reliable` (the wire does not say ordered or unordered)
        modes = ("ordered", "unordered") if kind == "message_sent" else ("reliable",)
        return {(e["channel"], e["number"]) for e in rows
                if e["kind"] == kind and e["delivery"] in modes and e["channel"] not in cancelled}  # fmt: skip

    # every reliable message on a channel that was not cancelled or closed early arrived, and nothing else did
    assert ordered(server, "message_received") == ordered(client, "message_sent")
    assert ordered(client, "message_received") == ordered(server, "message_sent")


async def test_serve_record_seals_its_segment_on_sigterm(tmp_path: Path) -> None:
    import aqueduct
    from aqueduct import RawCodec, RawMessage
    from aqueduct.quic.certs import make_dev_certs

    certs = make_dev_certs(tmp_path / "certs")
    rec = tmp_path / "rec"
    command = Path(sys.executable).with_name("aqueduct")
    proc = subprocess.Popen([str(command), "serve", "--echo", "--port", "0", "--cert", str(certs.cert),
                             "--key", str(certs.key), "--record", str(rec), "--record-payloads"],
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        url = "aqueduct://" + proc.stdout.readline().strip().removeprefix("listening on ")
        async with aqueduct.connect(url, ca=certs.ca, codec=RawCodec()) as conn:
            reply_tx, reply_rx = aqueduct.channel()
            await conn.entrypoint.send(RawMessage(b"ping", [reply_tx]))
            assert (await reply_rx.recv()).data == b"ping"
        proc.terminate()  # SIGTERM, as a service manager stops it
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
    events = read_events(rec)
    assert {"connection_opened", "message_received", "message_sent"} <= {e["kind"] for e in events}
    assert [e["payload"] for e in events if e["kind"] == "message_received"] == [b"ping"]


def test_the_cli_payload_limit_default_is_the_recorders() -> None:
    from aqueduct.cli._record import DEFAULT_PAYLOAD_LIMIT
    from aqueduct.recording.recorder import DEFAULT_PAYLOAD_LIMIT as RECORDER_DEFAULT

    assert DEFAULT_PAYLOAD_LIMIT == RECORDER_DEFAULT
