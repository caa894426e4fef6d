# The standalone media driver (`aeron_compat driver`): one process owning a MediaDriver (its ipc
# matching and its Aqueduct endpoint for aeron:udp) on behalf of every client process that uses
# its directory.  The directory holds `driver.lock` (flock'ed: one driver per directory),
# `driver.sock` (the Unix socket clients connect to) and `counters.json` (for `aeron_compat stat`).
# The directory (and the base directory holding the default one) must be private to this user, or is
# created so (client/directory.py); the lock is opened without following symbolic links.
# Everything runs on one asyncio loop.  Per client (ClientSession):
#   publications  the driver makes a log (its own session per client) and mirrors it: frames the
#                 client appended arrive as 'F' messages and go to the log's sinks; the log's
#                 connection state and min sink position go back as 'st' (the client's limit).
#   subscriptions a driver-side Subscription; its images' frames are moved (not consumed) to the
#                 client, and the image position is what the client reports ('pos'), so the
#                 publisher's window is the subscriber *process's* position, end to end.
# A duty cycle (`do_work`) forwards frames, events and status after each read and on a timer.
"""`StandaloneDriver`: the media driver as a process of its own."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
from pathlib import Path
from typing import IO, Any

from ..client.codes import END_FLAG, HDR_TYPE_DATA, AeronError
from ..client.context import Context
from ..client.counters import SNAPSHOT_NAME, base_dir
from ..client.directory import open_private, private_dir
from ..client.image import Image
from ..client.publication import PublicationLog
from ..client.subscription import Subscription
from ..media.batch import BatchError, decode_batch
from .media_driver import MediaDriver
from .wire import JSON, MessageReader, WireError, encode_frames, encode_json, split_frames

LOCK_NAME = "driver.lock"
SOCKET_NAME = "driver.sock"
IDLE_MAX = 0.001
"""Longest pause of the duty cycle when nothing happens (the latency bound for udp-fed images)."""


def default_dir() -> Path:
    """The standalone driver's directory unless told otherwise."""
    return base_dir() / "standalone"


class ClientSession:
    """One connected client process: its publications, subscriptions and announced images."""

    def __init__(self, driver: MediaDriver, writer: asyncio.StreamWriter) -> None:
        self.driver, self.writer = driver, writer
        self.logs: dict[int, PublicationLog] = {}
        self.subs: dict[int, Subscription] = {}
        self.images: dict[int, Image] = {}
        self.status: dict[int, tuple[bool, int]] = {}
        self.eos_sent: set[int] = set()

    def send(self, msg: dict[str, Any]) -> None:
        """Queue a JSON message to the client."""
        if not self.writer.is_closing():
            self.writer.write(encode_json(msg))

    # --- commands ------------------------------------------------------------------------------------
    def on_json(self, msg: dict[str, Any]) -> None:
        """Run one command; commands with an `rid` get a reply (an `error` if it failed)."""
        kind = msg.get("t")
        rid = msg.get("rid")
        try:
            reply = _COMMANDS[str(kind)](self, msg)
        except (AeronError, ValueError, KeyError, TypeError) as exc:
            if rid is None:
                self.driver.counters.add("errors")
                return
            reply = {"error": str(exc) or type(exc).__name__}
        if rid is not None:
            self.send({"t": "reply", "rid": rid, **(reply or {})})

    def _add_publication(self, msg: dict[str, Any]) -> dict[str, Any]:
        cid = int(msg["id"])
        log = self.driver.add_publication(str(msg["channel"]), int(msg["stream"]), bool(msg["exclusive"]),
                                          shared=False)
        self.logs[cid] = log
        return {"session": log.session_id, "itid": log.initial_term_id, "tl": log.term_length, "mtu": log.mtu,
                "win": log.window, "start": log.appender.tail, "reg": log.registration_id,
                "ident": log.source_identity}

    def _remove_publication(self, msg: dict[str, Any]) -> None:
        log = self.logs.pop(int(msg["id"]), None)
        self.status.pop(int(msg["id"]), None)
        if log is not None:
            log.refs = 1
            self.driver.release_publication(log)

    def _destination(self, msg: dict[str, Any]) -> None:
        log = self.logs[int(msg["id"])]
        if msg["t"] == "adddest":
            self.driver.add_destination(log, str(msg["dest"]))
        else:
            self.driver.remove_destination(log, str(msg["dest"]))

    def _add_subscription(self, msg: dict[str, Any]) -> dict[str, Any]:
        cid = int(msg["id"])
        sub = self.driver.add_subscription(str(msg["channel"]), int(msg["stream"]),
                                           lambda image: self._available(cid, image), self._unavailable)
        self.subs[cid] = sub
        return {"reg": sub.registration_id, "endpoint": sub.resolved_endpoint}

    def _remove_subscription(self, msg: dict[str, Any]) -> None:
        sub = self.subs.pop(int(msg["id"]), None)
        if sub is not None:
            for image in sub._images:
                self.images.pop(image.correlation_id, None)
            sub.close()

    def _position(self, msg: dict[str, Any]) -> None:
        image = self.images.get(int(msg["img"]))
        position = int(msg["pos"])
        if image is None or image.is_closed or position <= image.position:
            return
        image._values["bytes_received"] += position - image.position
        image.position = position
        if image._consumed_hook is not None and position >= image._report_at:
            image._consumed_hook()
        if image._eos_position is not None:
            image._close_if_drained()

    def _counters(self, msg: dict[str, Any]) -> dict[str, Any]:
        return {"counters": self.driver.counters.values}

    # --- frames from the client -------------------------------------------------------------------------
    def on_frames(self, body: bytes) -> None:
        """Frames the client appended to one of its logs: pass them to the log's sinks."""
        cid, batch = split_frames(body)
        log = self.logs.get(cid)
        if log is None:
            return
        frames = decode_batch(batch, log.initial_term_id, log.term_length)
        with log.lock:
            if frames[0].position != log.appender.tail or log.closed:
                raise WireError(f"frames for log {cid} not at its tail")
            log.appender.tail = frames[-1].next_position
            values = log._values
            values["messages_sent"] += sum(1 for f in frames if f.flags & END_FLAG and f.frame_type == HDR_TYPE_DATA)
            values["bytes_sent"] += log.appender.tail - frames[0].position
            log._deliver(frames)

    # --- events to the client ----------------------------------------------------------------------------
    def _available(self, cid: int, image: Image) -> None:
        if cid not in self.subs:
            return
        self.images[image.correlation_id] = image
        window = getattr(image._source, "window", image.term_length // 2)
        self.send({"t": "image", "sub": cid, "img": image.correlation_id, "session": image.session_id,
                   "itid": image.initial_term_id, "tl": image.term_length, "join": image.join_position,
                   "ident": image.source_identity, "win": window, "rcid": image.response_correlation_id})

    def _unavailable(self, image: Image) -> None:
        ident = image.correlation_id
        if self.images.pop(ident, None) is None:
            return
        self._forward(ident, image)
        eos = image._eos_position
        if ident not in self.eos_sent or eos is None or image.position < eos:
            self.send({"t": "lost", "img": ident})
        self.eos_sent.discard(ident)

    def _forward(self, ident: int, image: Image) -> bool:
        frames = image._frames
        worked = False
        if frames:
            batch = list(frames)
            frames.clear()
            if not self.writer.is_closing():
                self.writer.write(encode_frames(ident, batch))
            worked = True
        eos = image._eos_position
        if eos is not None and ident not in self.eos_sent:
            self.eos_sent.add(ident)
            self.send({"t": "eos", "img": ident, "pos": eos})
            worked = True
        return worked

    def do_work(self) -> bool:
        """Run image events, forward frames and end of stream, send changed publication status."""
        worked = False
        for sub in list(self.subs.values()):
            worked = bool(sub.do_work()) or worked
        for ident, image in list(self.images.items()):
            worked = self._forward(ident, image) or worked
        for cid, log in list(self.logs.items()):
            sinks = log.sinks
            state = (bool(sinks), min((s.position for s in sinks), default=0))
            if self.status.get(cid) != state:
                self.status[cid] = state
                self.send({"t": "st", "id": cid, "conn": state[0], "pos": state[1]})
                worked = True
        return worked

    def close(self) -> None:
        """The client went away: its publications end (end of stream), its subscriptions close."""
        for cid in list(self.logs):
            self._remove_publication({"id": cid})
        for cid in list(self.subs):
            self._remove_subscription({"id": cid})
        if not self.writer.is_closing():
            self.writer.close()


_COMMANDS: dict[str, Any] = {
    "addpub": ClientSession._add_publication,
    "rmpub": ClientSession._remove_publication,
    "adddest": ClientSession._destination,
    "rmdest": ClientSession._destination,
    "addsub": ClientSession._add_subscription,
    "rmsub": ClientSession._remove_subscription,
    "pos": ClientSession._position,
    "counters": ClientSession._counters,
}


class DirectoryLocked(AeronError):
    """Another driver holds the directory."""


class StandaloneDriver:
    """A MediaDriver serving client processes on `<dir>/driver.sock` (run with `await run()`)."""

    def __init__(self, ctx: Context | None = None) -> None:
        self.ctx = ctx or Context()
        self.directory = Path(self.ctx.aeron_dir or default_dir())
        self.ctx.aeron_dir = self.directory
        self.ctx.driver_loop = "caller"
        self.socket_path = self.directory / SOCKET_NAME
        self.sessions: set[ClientSession] = set()
        self._lock_file: IO[str] | None = None
        self.stopping = asyncio.Event()

    def _lock(self) -> None:
        if self.directory == default_dir():
            private_dir(base_dir())
        private_dir(self.directory)
        f = os.fdopen(open_private(self.directory / LOCK_NAME, os.O_RDWR | os.O_CREAT), "r+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            owner = f.read().strip() or "?"
            f.close()
            raise DirectoryLocked(f"aeron_dir: {self.directory} is in use by driver pid {owner}") from None
        f.truncate(0)
        f.write(str(os.getpid()))
        f.flush()
        self._lock_file = f
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()  # left by a driver that died

    async def run(self, ready: Any = None) -> None:
        """Lock the directory, serve clients until `stopping` is set (SIGINT/SIGTERM set it), clean up."""
        self._lock()
        self.driver = MediaDriver(self.ctx)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stopping.set)
        server = await asyncio.start_unix_server(self._serve, path=str(self.socket_path))
        os.chmod(self.socket_path, 0o600)  # only this user's processes may connect
        duty = asyncio.create_task(self._duty_cycle())
        if ready is not None:
            ready(self)
        try:
            await self.stopping.wait()
        finally:
            server.close()
            for session in list(self.sessions):
                session.writer.close()
            duty.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await duty
            await self.driver.aclose()
            for name in (SOCKET_NAME, SNAPSHOT_NAME, LOCK_NAME):
                with contextlib.suppress(FileNotFoundError):
                    (self.directory / name).unlink()
            if self._lock_file is not None:
                self._lock_file.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = ClientSession(self.driver, writer)
        self.sessions.add(session)
        messages = MessageReader()
        try:
            while data := await reader.read(1 << 16):
                for kind, body in messages.feed(data):
                    if kind == JSON:
                        session.on_json(body)
                    else:
                        session.on_frames(body)
                session.do_work()
        except (WireError, BatchError, ConnectionError):
            self.driver.counters.add("errors")
        finally:
            self.sessions.discard(session)
            session.close()

    async def _duty_cycle(self) -> None:
        idle = 0.0
        while True:
            worked = False
            for session in list(self.sessions):
                worked = session.do_work() or worked
            idle = 0.0 if worked else min(IDLE_MAX, idle * 2 or 0.00005)
            await asyncio.sleep(idle)


def serve_forever(ctx: Context) -> int:
    """Run a standalone driver in this process until SIGINT/SIGTERM (the `aeron_compat driver` command)."""
    def ready(drv: StandaloneDriver) -> None:
        print(f"driver listening on unix:{drv.socket_path} (dir {drv.directory}, pid {os.getpid()})", flush=True)

    try:
        asyncio.run(StandaloneDriver(ctx).run(ready))
    except DirectoryLocked as exc:
        print(f"aeron_compat driver: {exc}", flush=True)
        return 1
    return 0
