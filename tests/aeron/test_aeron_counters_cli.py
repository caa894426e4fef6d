"""Counters through the API and through the `aeron_compat stat` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aeron_compat import Aeron, Context
from aeron_compat.tools.cli import main


def test_counters_count_resources_bytes_and_back_pressure(aeron: Aeron) -> None:
    pub = aeron.add_publication("aeron:ipc?term-length=64k", 1)
    assert pub.offer(b"x") < 0
    sub = aeron.add_subscription("aeron:ipc", 1)
    while pub.offer(bytes(200)) > 0:
        pass
    sub.poll(lambda buf, hdr: None, 10)
    c = aeron.counters
    assert c["publications"] == 1 and c["subscriptions"] == 1 and c["images"] == 1
    assert c["not_connected_events"] == 1 and c["back_pressure_events"] == 1
    assert c["bytes_sent"] == pub.position and c["messages_sent"] == pub.position // 256
    assert c["bytes_received"] == 10 * 256
    pub.close()
    sub.close()
    c = aeron.counters
    assert c["publications"] == c["subscriptions"] == c["images"] == 0 and c["images_total"] == 1


def test_stat_command_prints_a_live_driver(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Aeron.connect(Context(aeron_dir=tmp_path / "drv", counters_interval=0)) as client:
        pub = client.add_publication("aeron:ipc?alias=orders", 7)
        client.add_subscription("aeron:ipc", 7)
        pub.offer(b"hello")
        client.driver.write_counters()
        assert main(["stat", "--dir", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert "- publications" in out and "pub-pos:" in out and "aeron:ipc?alias=orders" in out
        assert main(["stat", "--dir", str(tmp_path / "drv"), "--json"]) == 0
        (snap,) = json.loads(capsys.readouterr().out)
        assert snap["counters"]["messages_sent"] == 1
        assert {s["name"] for s in snap["streams"]} == {"pub-pos", "pub-lmt", "sub-pos"}


def test_stat_without_drivers_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stat", "--dir", str(tmp_path)]) == 1
    assert "no live aeron_compat driver" in capsys.readouterr().out


def test_close_removes_the_driver_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AERON_COMPAT_DIR", str(tmp_path))
    with Aeron.connect(Context(counters_interval=0)) as client:
        directory = client.driver.directory
        assert directory.parent == tmp_path
        client.driver.write_counters()
        assert (directory / "counters.json").exists()
    assert not directory.exists()
