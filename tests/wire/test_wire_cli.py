"""The `aqueduct wire` dissector: it reproduces the vector JSON for every valid
vector, exits 2 with one line on stderr for every invalid one, encodes every
valid frames vector back to its hex, and refuses bad JSON the same way. Runs
in-process; one smoke test runs the installed console script."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aqueduct.cli import main

VECTORS: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[2] / "specs" / "vectors" / "aqueduct-wire.json").read_text()
)["vectors"]
VALID = [v for v in VECTORS if v["valid"]]
INVALID = [v for v in VECTORS if not v["valid"]]
FIELDS = {
    "varint": ["value"],
    "channel_id": ["value", "direction", "minted_by", "oneshot", "index"],
    "frames": ["frames"],
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["wire", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("v", VALID, ids=[v["name"] for v in VALID])
def test_decode_reproduces_vector_json(v: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "decode", "--kind", v["kind"], v["hex"])
    assert (code, err) == (0, "")
    assert json.loads(out) == {k: v[k] for k in FIELDS[v["kind"]]}


@pytest.mark.parametrize("v", INVALID, ids=[v["name"] for v in INVALID])
def test_decode_of_invalid_vector_exits_2(v: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "decode", "--kind", v["kind"], v["hex"])
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("aqueduct wire: ")


FRAME_VECTORS = [v for v in VALID if v["kind"] == "frames"]


@pytest.mark.parametrize("v", FRAME_VECTORS, ids=[v["name"] for v in FRAME_VECTORS])
def test_encode_reproduces_vector_hex(v: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "encode", json.dumps({"frames": v["frames"]}))
    assert (code, out) == (0, v["hex"] + "\n")


def test_encode_takes_a_bare_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "encode", '[{"type": "SentUnreliable", "count": 5}]') == (0, "0405\n", "")


def test_decode_ignores_whitespace_in_hex(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "decode", "04 05\n07e807")
    assert code == 0
    assert json.loads(out)["frames"] == [
        {"type": "SentUnreliable", "count": 5},
        {"type": "FinishSender", "reliable_count": 1000},
    ]


@pytest.mark.parametrize("text", ["zz", "0", "0x0405", "04g5"])
def test_decode_of_bad_hex_exits_2(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "decode", text)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "hex" in err


def test_dash_reads_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("0405\n"))
    code, out, _ = run(capsys, "decode", "-")
    assert (code, json.loads(out)) == (0, {"frames": [{"type": "SentUnreliable", "count": 5}]})
    monkeypatch.setattr("sys.stdin", io.StringIO('[{"type": "ClosedChannelLost", "channel": 1}]'))
    assert run(capsys, "encode", "-") == (0, "0901\n", "")


def test_decode_respects_max_frame_size(capsys: pytest.CaptureFixture[str]) -> None:
    hexstr = "030000000568656c6c6f"
    assert run(capsys, "decode", "--max-frame-size", "5", hexstr)[0] == 0
    code, _, err = run(capsys, "decode", "--max-frame-size", "4", hexstr)
    assert code == 2 and "LIMIT_EXCEEDED" in err


BAD_JSON = {
    "not_json": "{frames",
    "empty_list": "[]",
    "not_a_list": '{"frames": 5}',
    "extra_top_key": '{"frames": [], "x": 1}',
    "unknown_type": '[{"type": "Bogus"}]',
    "missing_field": '[{"type": "Message", "channel": 0, "number": 0, "attachments": []}]',
    "extra_field": '[{"type": "SentUnreliable", "count": 1, "x": 2}]',
    "bool_as_int": '[{"type": "SentUnreliable", "count": true}]',
    "negative": '[{"type": "ChannelControl", "channel": -1}]',
    "over_64_bits": '[{"type": "FinishSender", "reliable_count": 18446744073709551616}]',
    "float": '[{"type": "FinishSender", "reliable_count": 1.0}]',
    "string_int": '[{"type": "FinishSender", "reliable_count": "5"}]',
    "bad_payload_hex": '[{"type": "Message", "channel": 0, "number": 0, "attachments": [], "payload": "xyz"}]',
    "lone_zero_range": '[{"type": "AckReliable", "ranges": [0]}]',
    "zero_in_middle": '[{"type": "CloseReceiver", "ranges": [1, 0, 2]}]',
    "empty_header_key": '[{"type": "ConnectionControl", "headers": [["", "00"]]}]',
    "non_ascii_key": '[{"type": "ConnectionControl", "headers": [["\\u00e9", "00"]]}]',
    "header_not_pair": '[{"type": "ConnectionControl", "headers": [["k"]]}]',
    "non_ascii_version": '[{"type": "Version", "version": "\\u00e9"}]',
    "frame_not_object": "[5]",
}


@pytest.mark.parametrize("text", list(BAD_JSON.values()), ids=list(BAD_JSON))
def test_encode_of_bad_json_exits_2(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "encode", text)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("aqueduct wire: ")


def test_console_script_smoke() -> None:
    script = Path(sys.executable).parent / "aqueduct"
    done = subprocess.run(
        [str(script), "wire", "decode", "ef505fa6600f408e41515545445543540b302e302e302d4146544552030007000200ff"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["frames"][1] == {
        "type": "Message",
        "channel": 0,
        "number": 7,
        "attachments": [],
        "payload": "00ff",
    }
    bad = subprocess.run([str(script), "wire", "decode", "0a"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
