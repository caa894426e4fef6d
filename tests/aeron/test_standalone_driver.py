"""The standalone driver: a driver process, and client processes meeting through its directory."""

from __future__ import annotations

import json
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeron_compat import NOT_CONNECTED, Aeron, BackoffIdleStrategy, Context, RegistrationError
from aeron_compat.driver.wire import MessageReader, WireError, encode_json
from aeron_compat.tools.cli import main as cli_main

PEER = str(Path(__file__).with_name("standalone_peer.py"))
WAIT = 20.0


class Proc:
    """A child process whose stdout lines are read by a thread (so waits have timeouts)."""

    def __init__(self, *args: str) -> None:
        self.popen = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.put(line)

    def line(self) -> str:
        """The next line printed (fails the test after WAIT seconds)."""
        try:
            return self.lines.get(timeout=WAIT)
        except queue.Empty:
            pytest.fail(f"no output from {self.popen.args} within {WAIT}s")

    def expect(self) -> dict[str, Any]:
        """The next JSON line, skipping anything else (warnings)."""
        while True:
            text = self.line()
            if text.startswith("{"):
                return dict(json.loads(text))

    def tell(self, command: str) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write(command + "\n")
        self.popen.stdin.flush()

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(timeout=WAIT)


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    try:
        yield started
    finally:
        for proc in started:
            proc.kill()


def start_driver(procs: list[Proc], directory: Path) -> Proc:
    driver = Proc("-m", "aeron_compat", "driver", "--dir", str(directory), "--counters-interval", "0.05")
    procs.append(driver)
    assert driver.line().startswith("driver listening on unix:")
    return driver


def peer(procs: list[Proc], *args: str) -> Proc:
    proc = Proc(PEER, *args)
    procs.append(proc)
    return proc


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def standalone(directory: Path, **kw: Any) -> Aeron:
    return Aeron.connect(Context(driver_mode="standalone", aeron_dir=directory, counters_interval=0, **kw))


def until(condition: Any, work: Any = None) -> None:
    idle = BackoffIdleStrategy()
    for _ in range(2_000_000):
        if condition():
            return
        idle.idle(work() if work else 0)
    pytest.fail("condition never became true")


@pytest.mark.parametrize("channel", ["aeron:ipc", "aeron:udp?endpoint=127.0.0.1:{port}",
                                     "aeron:udp?endpoint=127.0.0.1:{port}|transport=stream"])
def test_publisher_process_to_subscriber_process(tmp_path: Path, procs: list[Proc], channel: str) -> None:
    directory = tmp_path / "drv"
    start_driver(procs, directory)
    channel = channel.format(port=free_port())
    sub = peer(procs, "sub", str(directory), channel, "7")
    sub.expect()
    pub = peer(procs, "pub", str(directory), channel, "7")
    pub.expect()
    pub.tell("send 300")
    positions = pub.expect()["positions"]
    assert positions == [64 * (i + 1) for i in range(300)]  # 32-byte header + "m<i>" aligned to 32
    sub.tell("poll 300")
    got = sub.expect()["got"]
    assert got == [[f"m{i}", positions[i]] for i in range(300)]
    pub.tell("quit")  # the publication closes: end of stream at the subscriber's image
    sub.tell("eos")
    assert sub.expect()["unavailable"]


@pytest.mark.parametrize("transport", ["", "|transport=stream"])
def test_embedded_publisher_reaches_the_standalone_drivers_endpoint(tmp_path: Path, procs: list[Proc],
                                                                    transport: str) -> None:
    directory = tmp_path / "drv"
    start_driver(procs, directory)
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port()}{transport}"
    with standalone(directory) as aeron:
        sub = aeron.add_subscription(channel, 9)
        pub = peer(procs, "pub", str(directory), channel, "9", "embedded")  # its own driver, over QUIC or Stream
        pub.expect()
        pub.tell("send 12000")  # 768 KB: more than a window, so our positions must reach the publisher
        got: list[bytes] = []
        until(lambda: len(got) == 12000, lambda: sub.poll(lambda buf, hdr: got.append(bytes(buf)), 100))
        assert got == [f"m{i}".encode() for i in range(12000)]
        assert pub.expect()["positions"][-1] == 12000 * 64
        assert sub.images[0].source_identity.startswith("127.0.0.1:")


def test_back_pressure_across_processes(tmp_path: Path, procs: list[Proc]) -> None:
    directory = tmp_path / "drv"
    start_driver(procs, directory)
    sub = peer(procs, "sub", str(directory), "aeron:ipc", "3")
    sub.expect()
    with standalone(directory) as aeron:
        pub = aeron.add_publication("aeron:ipc?term-length=64k", 3)
        until(lambda: pub.is_connected)
        accepted = 0
        while (result := pub.offer(f"m{accepted}".encode())) > 0:
            accepted += 1
        assert result == -2 and accepted == 32 * 1024 // 64  # the window: half the term, the subscriber idle
        assert pub.position >= pub.position_limit
        sub.tell(f"poll {accepted}")  # the subscriber process gets exactly what was accepted
        assert [m for m, _ in sub.expect()["got"]] == [f"m{i}" for i in range(accepted)]
        until(lambda: pub.offer(b"more") > 0)  # its position came back through the driver
        assert aeron.counters["back_pressure_events"] >= 1


def test_stat_reads_the_standalone_driver(tmp_path: Path, procs: list[Proc],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    directory = tmp_path / "drv"
    start_driver(procs, directory)
    with standalone(directory) as aeron:
        sub = aeron.add_subscription("aeron:ipc", 4)
        pub = aeron.add_publication("aeron:ipc?alias=stat", 4)
        until(lambda: pub.is_connected)
        for _ in range(5):
            until(lambda: pub.offer(b"hello") > 0)

        def snapshot() -> dict[str, Any] | None:
            code = cli_main(["stat", "--dir", str(directory), "--json"])
            out = capsys.readouterr().out
            if code != 0:
                return None
            (snap,) = json.loads(out)
            return dict(snap) if snap["counters"]["messages_sent"] == 5 else None

        until(lambda: snapshot() is not None)
        snap = snapshot()
        assert snap is not None and snap["pid"] == procs[0].popen.pid
        assert {s["name"] for s in snap["streams"]} == {"pub-pos", "pub-lmt", "sub-pos"}
        assert any(s["channel"] == "aeron:ipc?alias=stat" and s["value"] == 5 * 64 for s in snap["streams"])
        assert aeron.counters["publications"] == 1 and aeron.counters["images"] == 1
        assert sub.image_count == 1


def test_driver_shutdown_disconnects_clients(tmp_path: Path, procs: list[Proc]) -> None:
    directory = tmp_path / "drv"
    driver = start_driver(procs, directory)
    errors: list[BaseException] = []
    with standalone(directory, error_handler=errors.append) as aeron:
        unavailable: list[int] = []
        sub = aeron.add_subscription("aeron:ipc", 5, on_unavailable_image=lambda i: unavailable.append(i.session_id))
        pub = aeron.add_publication("aeron:ipc", 5)
        until(lambda: pub.is_connected and sub.image_count == 1)
        driver.popen.send_signal(signal.SIGTERM)
        assert driver.popen.wait(timeout=WAIT) == 0
        until(lambda: not pub.is_connected and unavailable == [pub.session_id], lambda: sub.poll(lambda b, h: None, 1))
        assert pub.offer(b"late") == NOT_CONNECTED
        assert isinstance(errors[0], ConnectionError)
        with pytest.raises(RegistrationError):
            aeron.add_subscription("aeron:ipc", 6)
    assert sorted(p.name for p in directory.iterdir()) == []  # socket, lock and counters removed


def test_a_killed_client_ends_its_streams(tmp_path: Path, procs: list[Proc]) -> None:
    directory = tmp_path / "drv"
    start_driver(procs, directory)
    with standalone(directory) as aeron:
        unavailable: list[int] = []
        sub = aeron.add_subscription("aeron:ipc", 8, on_unavailable_image=lambda i: unavailable.append(i.session_id))
        pub = peer(procs, "pub", str(directory), "aeron:ipc", "8")
        session = pub.expect()["connected"]
        pub.tell("send 3")
        pub.expect()
        pub.popen.kill()  # no goodbye: the driver sees the connection drop
        got: list[bytes] = []
        until(lambda: unavailable == [session], lambda: sub.poll(lambda buf, hdr: got.append(bytes(buf)), 10))
        assert got == [b"m0", b"m1", b"m2"]  # what it sent before dying is still delivered (end of stream)
        until(lambda: aeron.counters["publications"] == 0)


def test_sessions_are_shared_within_a_process_not_across(tmp_path: Path, procs: list[Proc]) -> None:
    directory = tmp_path / "drv"
    start_driver(procs, directory)
    with standalone(directory) as a, standalone(directory) as b:
        first, second = a.add_publication("aeron:ipc", 1), a.add_publication("aeron:ipc", 1)
        other = b.add_publication("aeron:ipc", 1)
        assert first.session_id == second.session_id != other.session_id
        first.close()
        sub = b.add_subscription("aeron:ipc", 1)
        until(lambda: second.is_connected and other.is_connected and len(sub.images) == 2)
        assert sorted(i.session_id for i in sub.images) == sorted([second.session_id, other.session_id])


def test_one_driver_per_directory(tmp_path: Path, procs: list[Proc]) -> None:
    directory = tmp_path / "drv"
    first = start_driver(procs, directory)
    second = Proc("-m", "aeron_compat", "driver", "--dir", str(directory))
    procs.append(second)
    assert f"in use by driver pid {first.popen.pid}" in second.line()
    assert second.popen.wait(timeout=WAIT) == 1


def test_no_driver_is_an_error_and_auto_embeds(tmp_path: Path) -> None:
    with pytest.raises(RegistrationError, match="aeron_dir: no standalone driver"):
        standalone(tmp_path)
    with Aeron.connect(Context(driver_mode="auto", aeron_dir=tmp_path, counters_interval=0)) as aeron:
        assert aeron.driver.__class__.__name__ == "MediaDriver"
    with pytest.raises(ValueError, match="driver_mode"):
        Context(driver_mode="remote").conclude()


def test_driver_rejects_bad_commands_with_a_reply(tmp_path: Path, procs: list[Proc]) -> None:
    directory = tmp_path / "drv"
    start_driver(procs, directory)
    with standalone(directory) as aeron:
        with pytest.raises(RegistrationError, match="endpoint"):
            aeron.add_publication("aeron:udp?reliable=true", 1)  # parses; the driver refuses
        with pytest.raises(RegistrationError, match="no standalone driver"):
            standalone(tmp_path / "elsewhere")
        pub = aeron.add_publication("aeron:ipc", 1)  # the connection is still good
        assert pub.offer(b"x") == NOT_CONNECTED


def test_garbage_from_a_client_drops_only_that_client(tmp_path: Path, procs: list[Proc]) -> None:
    directory = tmp_path / "drv"
    start_driver(procs, directory)
    assert (directory / "driver.sock").stat().st_mode & 0o077 == 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.connect(str(directory / "driver.sock"))
        raw.sendall(b"\xff\xff\xff\x7fJ" + encode_json({"t": "addsub"}))
        raw.settimeout(WAIT)
        assert raw.recv(100) == b""  # the driver hung up on it
    with standalone(directory) as aeron:
        sub = aeron.add_subscription("aeron:ipc", 2)
        assert sub.registration_id > 0 and aeron.counters["errors"] == 1


@given(st.lists(st.dictionaries(st.text(max_size=5), st.integers(), max_size=3), max_size=5),
       st.integers(min_value=1, max_value=7))
def test_message_reader_reassembles_any_chunking(msgs: list[dict[str, int]], step: int) -> None:
    data = b"".join(encode_json(m) for m in msgs)
    reader = MessageReader()
    out = [body for i in range(0, len(data), step) for _, body in reader.feed(data[i : i + step])]
    assert out == msgs


@pytest.mark.parametrize("data", [b"\xff\xff\xff\x7f" + b"J", b"\x02\x00\x00\x00X{", b"\x03\x00\x00\x00J[]",
                                  b"\x03\x00\x00\x00J{x", b"\x00\x00\x00\x00J"])
def test_message_reader_rejects_bad_bytes(data: bytes) -> None:
    with pytest.raises(WireError):
        MessageReader().feed(data)
