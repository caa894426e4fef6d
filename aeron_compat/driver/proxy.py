# The client's side of a standalone driver (`Context(driver_mode="standalone")`), standing where an
# embedded MediaDriver would: the same Publication, Subscription and Image objects work on top.
#   publications  the client keeps the log (appender, positions, limit) as Aeron clients do; its
#                 one sink, DriverSink, sends each batch of frames to the driver as it is appended
#                 and takes its position and connected state from the driver's 'st' messages.
#   subscriptions a local Subscription whose images are fed by a reader thread ('image', 'F',
#                 'eos', 'lost'); each image reports its position back every quarter window.
#                 poll() also reads the socket itself first (`pump`, unless the reader thread is
#                 at it), saving a hand-over between threads when the user polls.
# Commands that need an answer (addpub, addsub, destinations, counters) wait for the reply; the
# reader thread builds the new objects before it reads further, so no event beats its object.
# If the driver goes away, publications become not connected and images unavailable (lost).
# Before trusting the socket the client checks that the directory is private to this user
# (client/directory.py) and, once connected, that the process serving it runs as this user
# (SO_PEERCRED): a socket another user put there or serves is refused with UnsafeDirectory.
"""`DriverProxy`: a connection to the standalone driver (`aeron_compat driver`)."""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..client.codes import RegistrationError
from ..client.context import Context
from ..client.counters import Counters, base_dir
from ..client.directory import UnsafeDirectory, private_dir, user_name
from ..client.image import Image
from ..client.logbuffer import Frame
from ..client.publication import PublicationLog
from ..client.subscription import ImageHandler, Subscription
from ..client.uri import ChannelUri
from ..media.batch import BatchError, decode_batch
from .standalone import SOCKET_NAME, default_dir
from .wire import JSON, MessageReader, WireError, encode_frames, encode_json, split_frames

RPC_TIMEOUT = 10.0
READER_WAKE = 0.05
"""Seconds the reader thread waits in select before checking whether the proxy closed."""
CLIENT_COUNTERS = ("not_connected_events", "back_pressure_events", "admin_actions")
"""Counted where offer runs (this process); the driver never sees these outcomes."""


class DriverSink:
    """A client log's sink: frames to the driver; position and connection as the driver reports them."""

    def __init__(self, proxy: DriverProxy, cid: int) -> None:
        self.proxy, self.cid = proxy, cid
        self.position = 0

    def deliver(self, frames: list[Frame]) -> None:
        """Send frames to the driver (called under the log's lock, so in stream order)."""
        self.proxy.send(encode_frames(self.cid, frames))

    def end_of_stream(self, final_position: int) -> None:
        """Nothing to do: the driver ends the stream when told `rmpub`."""

    def lost(self) -> None:
        """Nothing to do: the driver decides which sinks a log has."""

    @property
    def connected(self) -> bool:
        """Still connected to the driver."""
        return not self.proxy.closed


class _ImageSource:
    def __init__(self, proxy: DriverProxy, ident: int) -> None:
        self.proxy, self.ident = proxy, ident

    def remove_sink(self, sink: object) -> None:
        """The client image closed: report its final position (the driver's image then closes too)."""
        self.proxy.images.pop(self.ident, None)
        if isinstance(sink, Image):
            self.proxy.send_json({"t": "pos", "img": self.ident, "pos": sink.position})


class DriverProxy:
    """Connection to the standalone driver serving `ctx.aeron_dir`; used by `Aeron` like a MediaDriver."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx.conclude()
        self.directory = Path(ctx.aeron_dir or default_dir())
        self.driver_id = 0
        self.counters = Counters()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if ctx.aeron_dir is None:
                private_dir(base_dir(), create=False)
            private_dir(self.directory, create=False)
            self.sock.connect(str(self.directory / SOCKET_NAME))
        except OSError as exc:
            self.sock.close()
            raise RegistrationError(f"aeron_dir: no standalone driver at {self.directory} ({exc})") from None
        except UnsafeDirectory:
            self.sock.close()
            raise
        self._check_server()
        self.closed = False
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()  # publication sharing and reference counts
        self._ids = itertools.count(1)
        self._pending: dict[int, list[Any]] = {}
        self.logs: dict[int, PublicationLog] = {}
        self.sinks: dict[int, DriverSink] = {}
        self._log_cid: dict[int, int] = {}
        self._shared: dict[tuple[str, int], PublicationLog] = {}
        self.subs: dict[int, Subscription] = {}
        self._sub_cid: dict[Subscription, int] = {}
        self.images: dict[int, Image] = {}
        self._messages = MessageReader()
        self._read_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="aeron-driver-proxy", daemon=True)
        self._reader.start()

    def _check_server(self) -> None:
        """Refuse a driver that runs as another user (where the platform tells: SO_PEERCRED)."""
        if not hasattr(socket, "SO_PEERCRED"):
            return
        creds = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _gid = struct.unpack("3i", creds)
        if uid != os.geteuid():
            self.sock.close()
            raise UnsafeDirectory(self.directory / SOCKET_NAME, f"served by pid {pid} as {user_name(uid)}, not by "
                                  f"this user, {user_name(os.geteuid())}", uid)

    # --- sending -----------------------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        """Write one message (any thread)."""
        if self.closed:
            return
        with self._send_lock:
            with contextlib.suppress(OSError):  # the reader thread sees the same failure and reports it
                self.sock.sendall(data)

    def send_json(self, msg: dict[str, Any]) -> None:
        """Write one command."""
        self.send(encode_json(msg))

    def _rpc(self, msg: dict[str, Any], build: Callable[[dict[str, Any]], Any] | None = None) -> Any:
        if self.closed:
            raise RegistrationError("driver is closed")
        rid = next(self._ids)
        done = threading.Event()
        slot: list[Any] = [done, {"error": "driver connection lost"}, build]
        self._pending[rid] = slot
        self.send_json({**msg, "rid": rid})
        if not done.wait(RPC_TIMEOUT):
            self._pending.pop(rid, None)
            raise RegistrationError(f"standalone driver did not answer {msg['t']} in {RPC_TIMEOUT}s")
        result = slot[1]
        if isinstance(result, dict) and "error" in result:
            raise RegistrationError(str(result["error"]))
        return result

    # --- publications --------------------------------------------------------------------------------
    def add_publication(self, channel_str: str, stream_id: int, exclusive: bool) -> PublicationLog:
        """A log appended here and mirrored by the driver (concurrent ones shared within this process)."""
        channel = ChannelUri.parse(channel_str)
        with self._lock:
            return self._add_publication(channel, channel_str, stream_id, exclusive)

    def _add_publication(self, channel: ChannelUri, channel_str: str, stream_id: int,
                         exclusive: bool) -> PublicationLog:
        key = (channel_str, stream_id)
        shared = None if exclusive else self._shared.get(key)
        if shared is not None and not shared.closed:
            shared.refs += 1
            return shared
        cid = next(self._ids)

        def build(r: dict[str, Any]) -> PublicationLog:
            log = PublicationLog(self, channel, channel_str, stream_id, int(r["session"]), int(r["itid"]),
                                 int(r["tl"]), int(r["mtu"]), int(r["win"]), int(r["start"]), exclusive,
                                 int(r["reg"]), str(r["ident"]))
            log.refs = 1
            self.logs[cid], self.sinks[cid] = log, DriverSink(self, cid)
            self._log_cid[log.registration_id] = cid
            return log

        log: PublicationLog = self._rpc({"t": "addpub", "id": cid, "channel": channel_str, "stream": stream_id,
                                         "exclusive": exclusive}, build)
        if not exclusive:
            self._shared[key] = log
        return log

    def release_publication(self, log: PublicationLog) -> None:
        """Drop one handle; the last one ends the stream at the driver."""
        with self._lock:
            log.refs -= 1
            if log.refs > 0:
                return
            cid = self._log_cid.pop(log.registration_id, None)
            if self._shared.get((log.channel_str, log.stream_id)) is log:
                del self._shared[(log.channel_str, log.stream_id)]
        if cid is not None:
            self.logs.pop(cid, None)
            self.sinks.pop(cid, None)
            self.send_json({"t": "rmpub", "id": cid})
        log.close()

    def add_destination(self, log: PublicationLog, destination: str) -> None:
        """Manual MDC, done by the driver."""
        self._rpc({"t": "adddest", "id": self._log_cid[log.registration_id], "dest": destination})

    def remove_destination(self, log: PublicationLog, destination: str) -> None:
        """Manual MDC, done by the driver."""
        self._rpc({"t": "rmdest", "id": self._log_cid[log.registration_id], "dest": destination})

    # --- subscriptions -------------------------------------------------------------------------------
    def add_subscription(self, channel_str: str, stream_id: int, on_available: ImageHandler | None,
                         on_unavailable: ImageHandler | None) -> Subscription:
        """A local subscription whose images the driver feeds."""
        channel = ChannelUri.parse(channel_str)
        cid = next(self._ids)
        sub = Subscription(self, channel, channel_str, stream_id, 0, on_available, on_unavailable)
        self.subs[cid], self._sub_cid[sub] = sub, cid
        try:
            reply = self._rpc({"t": "addsub", "id": cid, "channel": channel_str, "stream": stream_id})
        except RegistrationError:
            self.subs.pop(cid, None)
            self._sub_cid.pop(sub, None)
            raise
        sub.registration_id = int(reply["reg"])
        sub.resolved_endpoint = reply.get("endpoint")
        return sub

    def remove_subscription(self, sub: Subscription) -> None:
        """Tell the driver to drop the subscription."""
        cid = self._sub_cid.pop(sub, None)
        if cid is not None:
            self.subs.pop(cid, None)
            self.send_json({"t": "rmsub", "id": cid})

    # --- reading (reader thread) ----------------------------------------------------------------------
    def _read(self) -> None:
        try:
            while not self.closed:
                readable, _, _ = select.select([self.sock], [], [], READER_WAKE)
                if readable:
                    with self._read_lock:
                        if not self._receive():
                            break
        except (OSError, ValueError, WireError, BatchError, KeyError, TypeError) as exc:
            if not self.closed and self.ctx.error_handler is not None:
                self.ctx.error_handler(exc)
        self._driver_gone()

    def pump(self) -> None:
        """Take what the driver sent, on the polling thread (no wait for the reader thread and the GIL)."""
        if self._read_lock.acquire(blocking=False):
            try:
                self._receive()  # at end of stream the reader thread finds it too and reports it
            except (OSError, WireError, BatchError, KeyError, TypeError, ValueError) as exc:
                if self.ctx.error_handler is not None:
                    self.ctx.error_handler(exc)
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_RDWR)  # the reader thread then ends the connection
            finally:
                self._read_lock.release()

    def _receive(self) -> bool:
        """Handle whatever is readable now; False at end of stream."""
        while True:
            try:
                data = self.sock.recv(1 << 16, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return True
            if not data:
                return False
            for kind, body in self._messages.feed(data):
                if kind == JSON:
                    self._on_json(body)
                else:
                    self._on_frames(body)

    def _on_json(self, msg: dict[str, Any]) -> None:
        kind = msg["t"]
        if kind == "reply":
            slot = self._pending.pop(int(msg["rid"]), None)
            if slot is not None:
                result: Any = msg
                if slot[2] is not None and "error" not in msg:
                    try:
                        result = slot[2](msg)
                    except (KeyError, TypeError, ValueError) as exc:
                        result = {"error": f"bad reply from driver: {exc}"}
                slot[1] = result
                slot[0].set()
        elif kind == "st":
            self._on_status(int(msg["id"]), bool(msg["conn"]), int(msg["pos"]))
        elif kind == "image":
            self._on_image(msg)
        elif kind == "eos":
            image = self.images.get(int(msg["img"]))
            if image is not None:
                image.end_of_stream(int(msg["pos"]))
        elif kind == "lost":
            image = self.images.pop(int(msg["img"]), None)
            if image is not None:
                image.lost()

    def _on_status(self, cid: int, connected: bool, position: int) -> None:
        log, sink = self.logs.get(cid), self.sinks.get(cid)
        if log is None or sink is None:
            return
        with log.lock:
            sink.position = position
            if connected and not log.sinks:
                log.add_sink(sink)
            elif not connected and log.sinks:
                log.remove_sink(sink)

    def _on_image(self, msg: dict[str, Any]) -> None:
        sub = self.subs.get(int(msg["sub"]))
        if sub is None or sub.is_closed:
            return
        ident, join, quarter = int(msg["img"]), int(msg["join"]), max(int(msg["win"]) // 4, 32)
        image = Image(sub, int(msg["session"]), int(msg["itid"]), int(msg["tl"]), join, str(msg["ident"]), ident,
                      _ImageSource(self, ident), int(msg.get("rcid") or 0))

        def consumed() -> None:
            image._report_at = image.position + quarter
            self.send_json({"t": "pos", "img": ident, "pos": image.position})

        image._consumed_hook = consumed
        image._report_at = join + quarter
        self.images[ident] = image
        sub._add_image(image)

    def _on_frames(self, body: bytes) -> None:
        ident, batch = split_frames(body)
        image = self.images.get(ident)
        if image is not None:
            image.deliver(decode_batch(batch, image.initial_term_id, image.term_length))

    def _driver_gone(self) -> None:
        was_closed, self.closed = self.closed, True
        for slot in list(self._pending.values()):
            slot[0].set()
        self._pending.clear()
        for log in list(self.logs.values()):
            with log.lock:
                log.sinks = []
        for image in list(self.images.values()):
            image.lost()
        self.images.clear()
        if not was_closed and self.ctx.error_handler is not None:
            self.ctx.error_handler(ConnectionError(f"standalone driver at {self.directory} went away"))

    # --- counters and lifecycle -----------------------------------------------------------------------
    def counter_values(self) -> dict[str, int]:
        """The driver's system counters, plus the offer outcomes only this client sees."""
        values = dict(self._rpc({"t": "counters"})["counters"])
        local = self.counters.values
        for name in CLIENT_COUNTERS:
            values[name] = values.get(name, 0) + local[name]
        return values

    def close(self) -> None:
        """Disconnect (the driver ends this client's streams); the driver keeps running."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self._reader.join(timeout=5)
        self.sock.close()

    async def aclose(self) -> None:
        """`close()` (nothing to wait for)."""
        self.close()
