# The media driver: owns the counters, allocates sessions, builds publication logs and resolves
# channels into matching keys.  aeron:ipc is matched within this driver; aeron:udp within the
# network domain chosen by the context (the process loopback, or Aqueduct connections), or, for
# channels with `transport=stream`, within the driver's Marlin Stream network.
# Matching is synchronous: an ipc publication added while a subscription exists is connected
# when add_publication returns.  A daemon "conductor" thread only writes counters snapshots.
# Its directory (and, for the default one, the base directory) is private to this user or refused
# before anything is written or swept there (client/directory.py).
"""`MediaDriver`: the process's endpoint."""

from __future__ import annotations

import itertools
import os
import random
import shutil
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..client.codes import RegistrationError
from ..client.context import Context
from ..client.counters import Counters, base_dir, sweep_stale_driver_dirs, write_snapshot
from ..client.directory import private_dir
from ..client.ids import next_correlation_id
from ..client.image import Image
from ..client.logbuffer import compute_position, position_bits_to_shift
from ..client.publication import PublicationLog
from ..client.subscription import ImageHandler, Subscription
from ..client.uri import ChannelUri, parse_endpoint, parse_size
from ..media.loopback import LOOPBACK, LoopbackNetwork, normalise_host
from ..media.matcher import Key, Matcher

if TYPE_CHECKING:
    from ..media.network import DriverNetwork

_driver_ids = itertools.count(1)


def _canonical(channel: ChannelUri) -> tuple[Any, ...]:
    keys = ("endpoint", "control", "control-mode", "session-id", "reliable", "response-correlation-id", "transport")
    return (channel.media, *(channel.get(k) for k in keys))


def _endpoint(channel: ChannelUri, name: str) -> str:
    host, port = parse_endpoint(channel.params[name], name)
    return f"{normalise_host(host)}:{port}"


class MediaDriver:
    """Embedded driver: `MediaDriver.launch_embedded(ctx)`, closed by its Aeron or by `close()`."""

    def __init__(self, ctx: Context | None = None) -> None:
        self.ctx = (ctx or Context()).conclude()
        self.driver_id = next(_driver_ids)
        self.counters = Counters()
        self.ipc = Matcher()
        self._network: LoopbackNetwork | DriverNetwork | None = None
        self._stream_network: DriverNetwork | None = None
        self.address = f"127.0.0.1:{LOOPBACK.ephemeral_port()}"
        self.logs: list[PublicationLog] = []
        self.subscriptions: list[Subscription] = []
        self._bindings: dict[int, str] = {}
        self._lock = threading.RLock()
        self.closed = False
        self._started = time.time()
        self._own_dir = self.ctx.aeron_dir is None
        self.directory = Path(self.ctx.aeron_dir or base_dir() / f"driver-{os.getpid()}-{self.driver_id}")
        if self._own_dir:
            sweep_stale_driver_dirs(private_dir(self.directory.parent))
        private_dir(self.directory)
        self._stop = threading.Event()
        self._conductor: threading.Thread | None = None
        if self.ctx.counters_interval > 0:
            self._conductor = threading.Thread(target=self._run_conductor, name="aeron-conductor", daemon=True)
            self._conductor.start()

    @property
    def network(self) -> LoopbackNetwork | DriverNetwork:
        """The aeron:udp domain, started on first use (so ipc-only clients start no QUIC endpoint)."""
        if self._network is None:
            if self.ctx.udp_media == "aqueduct":
                from ..media.aqueduct import AqueductTransport
                from ..media.network import DriverNetwork

                self._network = DriverNetwork(self, AqueductTransport(self.ctx))
            else:
                self._network = LOOPBACK
        return self._network

    @property
    def stream_network(self) -> DriverNetwork:
        """The Marlin Stream domain of `transport=stream` channels, started on first use."""
        if self._stream_network is None:
            from ..media.marlin import MarlinTransport
            from ..media.network import DriverNetwork

            self._stream_network = DriverNetwork(self, MarlinTransport())
        return self._stream_network

    def network_for(self, channel: ChannelUri) -> LoopbackNetwork | DriverNetwork:
        """The aeron:udp domain `channel` travels in."""
        return self.stream_network if channel.get("transport") == "stream" else self.network

    def _networks(self) -> list[DriverNetwork]:
        """The socket networks started so far."""
        started = (self._network, self._stream_network)
        return [n for n in started if n is not None and not isinstance(n, LoopbackNetwork)]

    @classmethod
    def launch_embedded(cls, ctx: Context | None = None) -> MediaDriver:
        """Start a driver inside this process."""
        return cls(ctx)

    # --- publications ----------------------------------------------------------------------------
    def add_publication(self, channel_str: str, stream_id: int, exclusive: bool, shared: bool = True) -> PublicationLog:
        """A log for `channel_str`/`stream_id`: shared by concurrent publications, fresh for exclusive ones
        (and for every publication when not `shared`: a standalone driver's clients each append their own)."""
        channel = ChannelUri.parse(channel_str)
        self._check_open()
        keys = self._publication_keys(channel)
        if not channel.is_ipc():
            self.network_for(channel).prepare(keys)
        with self._lock:
            if not exclusive and shared:
                for log in self.logs:
                    if (not log.exclusive and not log.closed and log.stream_id == stream_id
                            and _canonical(log.channel) == _canonical(channel)):
                        log.refs += 1
                        return log
            log = self._new_log(channel, channel_str, stream_id, exclusive)
            if channel.get("control-mode") == "response":
                log.response_correlation_id = 0
            log.refs = 1
            self.logs.append(log)
            self.counters.add("exclusive_publications" if exclusive else "publications")
            self._domain(channel).add_log(log, keys)
            return log

    def _new_log(self, channel: ChannelUri, channel_str: str, stream_id: int, exclusive: bool) -> PublicationLog:
        term_length = parse_size(channel.params["term-length"], "term-length") if "term-length" in channel.params \
            else self.ctx.term_length
        mtu = parse_size(channel.params["mtu"], "mtu") if "mtu" in channel.params else self.ctx.mtu
        if mtu > term_length // 8:
            raise RegistrationError(f"mtu: {mtu} larger than term-length / 8")
        session = channel.get("session-id")
        if session is not None:
            session_id = int(session)
            if any(lg.session_id == session_id and lg.stream_id == stream_id and not lg.closed
                   and (exclusive or lg.exclusive) for lg in self.logs):
                raise RegistrationError(f"session-id: {session_id} already used on stream {stream_id}")
        else:
            session_id = self._fresh_session_id(stream_id)
        initial = channel.get("init-term-id")
        initial_term_id = int(initial) if initial is not None else random.randint(-(2**31), 2**31 - 1)
        start = 0
        if initial is not None and "term-id" in channel.params:
            start = compute_position(int(channel.params["term-id"]), int(channel.params.get("term-offset", "0")),
                                     position_bits_to_shift(term_length), initial_term_id)
            if start & 31:
                raise RegistrationError("term-offset: must be a multiple of 32")
        window = self.ctx.publication_window or term_length // 2
        identity = "aeron:ipc" if channel.is_ipc() else self.address
        return PublicationLog(self, channel, channel_str, stream_id, session_id, initial_term_id, term_length, mtu,
                              window, start, exclusive, next_correlation_id(), identity)

    def _fresh_session_id(self, stream_id: int) -> int:
        low, high = self.ctx.publication_reserved_session_id_low, self.ctx.publication_reserved_session_id_high
        used = {lg.session_id for lg in self.logs if lg.stream_id == stream_id}
        while True:
            candidate = random.randint(-(2**31), 2**31 - 1)
            if not low <= candidate <= high and candidate not in used:
                return candidate

    def _publication_keys(self, channel: ChannelUri) -> set[Key]:
        if channel.is_ipc():
            return {("ipc",)}
        mode = channel.get("control-mode")
        if mode == "response":
            image = self.find_image(int(channel.get("response-correlation-id") or 0))
            if image is None:
                raise RegistrationError("response-correlation-id: no image with that correlation id")
            if self._transport_of(image) != channel.get("transport"):
                raise RegistrationError("transport: a response publication must use its image's transport")
            return {self.network_for(channel).response_key(image)}
        if mode == "manual":
            return set()
        if "control" in channel.params:
            return {("ctl", _endpoint(channel, "control"))}
        if "endpoint" not in channel.params:
            raise RegistrationError("endpoint: a udp publication needs an endpoint (or control for MDC)")
        return {("ep", _endpoint(channel, "endpoint"))}

    def _transport_of(self, image: Image) -> str | None:
        return next((s.channel_uri.get("transport") for s in self.subscriptions if image in s._images), None)

    def add_destination(self, log: PublicationLog, destination: str) -> None:
        """Manual MDC: send `log` to subscriptions at `destination`'s endpoint too."""
        self._check_manual(log)
        endpoint = _endpoint(ChannelUri.parse(destination), "endpoint")
        with self._lock:
            if endpoint not in log.destinations:
                log.destinations.append(endpoint)
            self.network_for(log.channel).set_keys(log, {("ep", e) for e in log.destinations})

    def remove_destination(self, log: PublicationLog, destination: str) -> None:
        """Manual MDC: stop sending to `destination`; its images become unavailable."""
        self._check_manual(log)
        endpoint = _endpoint(ChannelUri.parse(destination), "endpoint")
        with self._lock:
            if endpoint in log.destinations:
                log.destinations.remove(endpoint)
            keys = {("ep", e) for e in log.destinations}
            network = self.network_for(log.channel)
            network.set_keys(log, keys)
            for sink in network.sinks_of(log, lambda k: k in keys):
                with log.lock:
                    log.remove_sink(sink)
                sink.lost()

    @staticmethod
    def _check_manual(log: PublicationLog) -> None:
        if log.channel.get("control-mode") != "manual":
            raise RegistrationError("control-mode: destinations need control-mode=manual")

    def release_publication(self, log: PublicationLog) -> None:
        """Drop one handle; the last one closes the log (end of stream at every image)."""
        with self._lock:
            log.refs -= 1
            if log.refs > 0:
                return
            if log in self.logs:
                self.logs.remove(log)
                self.counters.add("exclusive_publications" if log.exclusive else "publications", -1)
            self._domain(log.channel).remove_log(log)
        log.close()

    # --- subscriptions ---------------------------------------------------------------------------
    def add_subscription(self, channel_str: str, stream_id: int, on_available: ImageHandler | None,
                         on_unavailable: ImageHandler | None) -> Subscription:
        """A subscription, linked at once to every matching publication."""
        channel = ChannelUri.parse(channel_str)
        self._check_open()
        sub = Subscription(self, channel, channel_str, stream_id, next_correlation_id(), on_available, on_unavailable)
        key = self._subscription_key(channel, sub)
        with self._lock:
            self.subscriptions.append(sub)
            self.counters.add("subscriptions")
            self._domain(channel).add_subscription(sub, key)
            return sub

    def _subscription_key(self, channel: ChannelUri, sub: Subscription) -> Key:
        if channel.is_ipc():
            return ("ipc",)
        mode = channel.get("control-mode")
        if mode == "manual":
            raise RegistrationError("control-mode: manual subscriptions (multi-destination receive) unsupported")
        if mode == "response":
            return ("resp", sub.registration_id)
        if "endpoint" in channel.params:
            host, port = parse_endpoint(channel.params["endpoint"], "endpoint")
            sub.resolved_endpoint = self.network_for(channel).bind(self.driver_id, host, port)
            self._bindings[sub.registration_id] = sub.resolved_endpoint
        if "control" in channel.params:
            return ("ctl", _endpoint(channel, "control"))
        if sub.resolved_endpoint is None:
            raise RegistrationError("endpoint: a udp subscription needs an endpoint (or control for MDC)")
        return ("ep", sub.resolved_endpoint)

    def remove_subscription(self, sub: Subscription) -> None:
        """Forget `sub` (its images are closed by the subscription)."""
        with self._lock:
            if sub in self.subscriptions:
                self.subscriptions.remove(sub)
                self.counters.add("subscriptions", -1)
            self._domain(sub.channel_uri).remove_subscription(sub)
            endpoint = self._bindings.pop(sub.registration_id, None)
            if endpoint is not None:
                self.network_for(sub.channel_uri).unbind(endpoint)

    def _domain(self, channel: ChannelUri) -> Matcher:
        return self.ipc if channel.is_ipc() else self.network_for(channel)

    def find_image(self, correlation_id: int) -> Image | None:
        """An image of this driver by correlation id."""
        for sub in self.subscriptions:
            for image in sub._images:
                if image.correlation_id == correlation_id:
                    return image
        return None

    # --- counters --------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """System counters and per-stream positions, as `aeron_compat stat` prints them."""
        streams: list[dict[str, Any]] = []
        for log in list(self.logs):
            base = {"session_id": log.session_id, "stream_id": log.stream_id, "channel": log.channel_str}
            streams.append({"name": "pub-pos", "value": log.appender.tail, **base})
            streams.append({"name": "pub-lmt", "value": log.compute_limit(), **base})
        for sub in list(self.subscriptions):
            for image in sub._images:
                streams.append({"name": "sub-pos", "value": image.position, "session_id": image.session_id,
                                "stream_id": sub.stream_id, "channel": sub.channel})
        links = [line for network in self._networks() for line in network.describe()]
        return {"pid": os.getpid(), "driver_id": self.driver_id, "directory": str(self.directory),
                "started": self._started, "time": time.time(), "counters": dict(self.counters.values),
                "streams": streams, "links": links}

    def counter_values(self) -> dict[str, int]:
        """The system counters (a copy)."""
        return self.counters.values

    def write_counters(self) -> None:
        """Write the snapshot file now."""
        write_snapshot(self.directory, self.snapshot())

    def _run_conductor(self) -> None:
        while not self._stop.wait(self.ctx.counters_interval):
            try:
                self.write_counters()
            except OSError as exc:  # a full or read-only disk must not kill the driver
                self.counters.add("errors")
                if self.ctx.error_handler is not None:
                    self.ctx.error_handler(exc)

    # --- lifecycle -------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise RegistrationError("driver is closed")

    async def aclose(self) -> None:
        """`close()`, then wait for the network to finish closing (drivers running on the caller's loop)."""
        self.close()
        for network in self._networks():
            await network.wait_closed()

    def close(self) -> None:
        """Close every publication and subscription, stop the conductor, remove the directory."""
        if self.closed:
            return
        self.closed = True
        for log in list(self.logs):
            log.refs = 1
            self.release_publication(log)
        for sub in list(self.subscriptions):
            sub.close()
        for network in self._networks():
            network.close()
        self._stop.set()
        if self._conductor is not None:
            self._conductor.join()
        if self._own_dir:
            shutil.rmtree(self.directory, ignore_errors=True)

