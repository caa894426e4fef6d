# aeron:udp between drivers of different processes, over a `Transport` (transport.py).  Each driver is one
# endpoint of its transport:
#  - a subscription's `endpoint`, and a publication's `control` endpoint, are endpoints the driver serves
#    (one listener per endpoint, shared);
#  - a publication's `endpoint` (and a subscription's `control`) is where the driver connects
#    (one connection per remote endpoint, shared, re-dialled while it is wanted).
# A connection is a link (link.py) carrying control messages both ways, so both drivers can talk on the
# one connection the dialler opened (which is what gets through NAT).  Control messages:
#   hello        the dialler's first message (the transport's `dial` and `greet`)
#   reg / unreg  a subscription announces itself (unicast subscriptions on every link accepted at
#                their endpoint; MDC and response subscriptions on their link to `control`)
#   setup        a publication session for one registered subscription, with what the transport
#                carries it on (sessions.py; the sink and session types are the transport's)
# Everything here is the same on every transport; the transport only listens, greets, dials and makes
# sinks and sessions.  The driver's asyncio loop is the running loop of whoever created the driver (async
# users), or the process's shared driver loop thread (sync users); calls from other threads hop onto it.
"""`DriverNetwork`: a driver's aeron:udp network over one transport."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from aqueduct.errors import AqueductError

from ..client.codes import RegistrationError
from ..client.context import Context
from ..client.counters import Counters
from ..client.ids import next_correlation_id
from ..client.image import Image
from ..client.publication import PublicationLog
from ..client.subscription import Subscription
from . import shared_loop
from .link import ControlLink
from .loopback import normalise_host
from .matcher import Key, Matcher
from .sessions import RemoteSubscriber, SessionCore
from .transport import Listening, Transport

RECONNECT_DELAY = 0.05


@dataclass
class _Listener:
    stack: contextlib.AsyncExitStack
    refs: int = 1
    links: list[ControlLink] = field(default_factory=list)


class NetworkHost(Protocol):
    """The driver a network serves (`MediaDriver`): settings, counters, and the lock and subscription
    list the network reads when it announces or looks up subscriptions."""

    ctx: Context
    counters: Counters
    driver_id: int
    subscriptions: list[Subscription]

    @property
    def _lock(self) -> AbstractContextManager[Any]:
        """Held while matching changes."""


class DriverNetwork(Matcher):
    """A driver's endpoints on one transport: listeners, outgoing links, remote subscribers and sessions."""

    def __init__(self, driver: NetworkHost, transport: Transport) -> None:
        super().__init__()
        self.driver = driver
        self.transport = transport
        ctx = driver.ctx
        self.listeners: dict[str, _Listener] = {}
        self._closing: dict[str, asyncio.Task[None]] = {}
        self.out_links: dict[str, ControlLink] = {}
        self.wanted: set[str] = set()
        self.remote: dict[tuple[int, int], RemoteSubscriber] = {}
        self.sessions: set[SessionCore] = set()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.closed = False
        self._close_task: asyncio.Task[None] | None = None
        running: asyncio.AbstractEventLoop | None = None
        if ctx.driver_loop != "thread":
            with contextlib.suppress(RuntimeError):
                running = asyncio.get_running_loop()
            if running is None and ctx.driver_loop == "caller":
                raise RegistrationError("driver_loop: 'caller' needs a running asyncio loop")
        self.thread: threading.Thread | None = None
        self._owner: shared_loop.LoopThread | None = None
        if running is not None:
            self.loop = running
            self.loop_thread = threading.get_ident()
        else:
            self._owner = shared_loop.acquire()
            self.loop, self.loop_thread, self.thread = self._owner.loop, self._owner.ident, self._owner.thread

    # --- plumbing ----------------------------------------------------------------------------------
    def call(self, fn: Callable[[], object]) -> None:
        """Run `fn` on the loop (now, if already there)."""
        if threading.get_ident() == self.loop_thread:
            fn()
        elif not self.loop.is_closed():
            self.loop.call_soon_threadsafe(fn)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """A task on the loop that the network cancels when it closes (loop)."""
        task = self.loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.count("errors")
            if self.driver.ctx.error_handler is not None:
                self.driver.ctx.error_handler(task.exception())  # type: ignore[arg-type]

    def count(self, name: str, n: int = 1) -> None:
        """Bump a driver counter."""
        self.driver.counters.add(name, n)

    @staticmethod
    def next_id() -> int:
        """A fresh correlation id."""
        return next_correlation_id()

    # --- endpoints ---------------------------------------------------------------------------------
    def bind(self, driver_id: int, host: str, port: int) -> str:
        """Serve `host:port` (shared by this driver's subscriptions); returns the bound endpoint."""
        host = normalise_host(host)
        endpoint = f"{host}:{port}"
        if port and endpoint in self.listeners:
            self.listeners[endpoint].refs += 1
            return endpoint
        if self.thread is None:
            if not port:
                raise RegistrationError("endpoint: port 0 needs a driver with its own loop thread")
            self.listeners[endpoint] = _Listener(contextlib.AsyncExitStack(), refs=1)
            self.spawn(self._listen(host, port, self.listeners[endpoint]))
            return endpoint
        future = asyncio.run_coroutine_threadsafe(self._listen(host, port, None), self.loop)
        try:
            return future.result(timeout=10)
        except OSError as exc:
            raise RegistrationError(f"endpoint: cannot serve {endpoint}: {exc}") from exc

    async def _listen(self, host: str, port: int, listener: _Listener | None) -> str:
        closing = self._closing.pop(f"{host}:{port}", None)
        if closing is not None:
            await asyncio.wait([closing])
        listener = listener or _Listener(contextlib.AsyncExitStack())
        listening = await self.transport.listen(host, port, listener.stack)
        endpoint = f"{host}:{listening.port}"
        self.listeners[endpoint] = listener
        accepting = self.loop.create_task(self._accept(endpoint, listening))
        self.tasks.add(accepting)
        accepting.add_done_callback(self._task_done)
        listener.stack.callback(accepting.cancel)
        return endpoint

    def unbind(self, endpoint: str) -> None:
        """Stop serving `endpoint` when nothing uses it any more."""
        listener = self.listeners.get(endpoint)
        if listener is None:
            return
        listener.refs -= 1
        if listener.refs <= 0 and not self._control_in_use(endpoint):
            del self.listeners[endpoint]
            self.call(functools.partial(self._stop_listening, endpoint, listener))

    def _stop_listening(self, endpoint: str, listener: _Listener) -> None:
        task = self.loop.create_task(listener.stack.aclose())
        self._closing[endpoint] = task
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _control_in_use(self, endpoint: str) -> bool:
        return any(("ctl", endpoint) in keys for log, keys in self.logs if not log.closed)

    async def _accept(self, endpoint: str, listening: Listening) -> None:
        async for peer in listening.peers:
            self.spawn(self._accepted(endpoint, peer))

    async def _accepted(self, endpoint: str, peer: Any) -> None:
        link = await self.transport.greet(peer, self.on_control, endpoint)
        if link is not None:
            await self._serve_link(endpoint, link)

    async def _serve_link(self, endpoint: str, link: ControlLink) -> None:
        """Run a link accepted at `endpoint`, announcing the subscriptions served there."""
        listener = self.listeners.get(endpoint)
        if listener is not None:
            listener.links.append(link)
        with self.driver._lock:
            for sub, key in self.subs:
                if key == ("ep", endpoint) and isinstance(sub, Subscription):
                    link.send_ctl(self._reg("ep", sub))
        await link.run()
        self._link_lost(link)
        if listener is not None and link in listener.links:
            listener.links.remove(link)

    def want_link(self, endpoint: str) -> None:
        """Keep a connection to `endpoint` up (dialling again after failures)."""
        if endpoint in self.wanted or endpoint in self.listeners:
            return
        self.wanted.add(endpoint)
        self.call(lambda: self.spawn(self._dial(endpoint)))

    async def _dial(self, endpoint: str) -> None:
        host, _, port = endpoint.rpartition(":")
        while not self.closed:
            try:
                link = await self.transport.dial(host, int(port), endpoint, self.on_control)
            except (AqueductError, OSError, ValueError):
                self.count("connection_errors")
                await asyncio.sleep(RECONNECT_DELAY)
                continue
            self.out_links[endpoint] = link
            with self.driver._lock:
                for sub, key in self.subs:
                    if isinstance(sub, Subscription) and self._control_of(sub) == endpoint:
                        link.send_ctl(self._reg("resp" if key[0] == "resp" else "ctl", sub))
            await link.run()
            self.out_links.pop(endpoint, None)
            self._link_lost(link)
            if not self.closed:
                self.count("connection_errors")
                await asyncio.sleep(RECONNECT_DELAY)

    @staticmethod
    def _control_of(sub: Subscription) -> str | None:
        control = sub.channel_uri.get("control")
        if control is None:
            return None
        host, _, port = control.rpartition(":")
        return f"{normalise_host(host)}:{port}"

    def _link_lost(self, link: ControlLink) -> None:
        with self.driver._lock:
            for key in [k for k in self.remote if k[0] == link.id]:
                subscriber = self.remote.pop(key)
                super().remove_subscription(subscriber)
                subscriber.close()
        for session in [s for s in self.sessions if s.link is link]:
            session.image.lost()
            session.shutdown()

    # --- matching hooks ----------------------------------------------------------------------------
    def prepare(self, keys: set[Key]) -> None:
        """Serve the control endpoints a new publication needs (called without the driver lock)."""
        for key in keys:
            if key[0] == "ctl" and key[1] not in self.listeners:
                host, _, port = key[1].rpartition(":")
                self.bind(self.driver.driver_id, host, int(port))

    def add_log(self, log: PublicationLog, keys: set[Key]) -> None:
        """Match locally and with known remote subscribers; dial the endpoints it sends to."""
        super().add_log(log, keys)
        self._dial_for(keys)

    def set_keys(self, log: PublicationLog, keys: set[Key]) -> None:
        """Manual destinations changed."""
        super().set_keys(log, keys)
        self._dial_for(keys)

    def _dial_for(self, keys: set[Key]) -> None:
        for key in keys:
            if key[0] == "ep":
                self.want_link(key[1])

    def add_subscription(self, sub: Any, key: Key) -> None:
        """Match locally, then announce the subscription where publications will look for it."""
        super().add_subscription(sub, key)
        if not isinstance(sub, Subscription):
            return
        if key[0] == "ep":
            listener = self.listeners.get(key[1])
            for link in listener.links if listener else []:
                self.call(functools.partial(link.send_ctl, self._reg("ep", sub)))
            return
        control = self._control_of(sub)
        if control is None:
            return
        out = self.out_links.get(control)
        if out is not None:
            self.call(functools.partial(out.send_ctl, self._reg("resp" if key[0] == "resp" else "ctl", sub)))
        self.want_link(control)

    def remove_subscription(self, sub: Any) -> None:
        """Forget it locally and tell the drivers it was announced to."""
        super().remove_subscription(sub)
        msg = {"t": "unreg", "sub": sub.registration_id}
        links = [*self.out_links.values(), *(lk for li in self.listeners.values() for lk in li.links)]
        for link in links:
            self.call(functools.partial(link.send_ctl, msg))

    def response_key(self, image: Image) -> Key:
        """Key of a response publication answering `image`."""
        source = image._source
        if isinstance(source, SessionCore):
            return ("resp", source.link.id, image.response_correlation_id)
        return ("resp", image.response_correlation_id)

    @staticmethod
    def _reg(kind: str, sub: Subscription) -> dict[str, Any]:
        return {"t": "reg", "kind": kind, "sub": sub.registration_id, "stream": sub.stream_id,
                "session": sub.session_filter}

    # --- control messages (loop) ----------------------------------------------------------------------
    def on_control(self, link: ControlLink, msg: dict[str, Any]) -> None:
        """Dispatch one control message from `link`."""
        kind = msg.get("t")
        try:
            if kind == "reg":
                self._on_reg(link, msg)
            elif kind == "unreg":
                with self.driver._lock:
                    subscriber = self.remote.pop((link.id, int(msg["sub"])), None)
                    if subscriber is not None:
                        super().remove_subscription(subscriber)
                if subscriber is not None:
                    subscriber.close()
            elif kind == "setup":
                self._on_setup(link, msg)
        except (KeyError, TypeError, ValueError):
            self.count("errors")

    def _on_reg(self, link: ControlLink, msg: dict[str, Any]) -> None:
        sub_id = int(msg["sub"])
        where = {"ep": link.endpoint, "ctl": link.listener}.get(msg["kind"])
        key: Key = ("resp", link.id, sub_id) if msg["kind"] == "resp" else ("ep" if msg["kind"] == "ep" else "ctl",
                                                                           where)
        if key[1] is None:
            return
        if sum(k[0] == link.id for k in self.remote) >= self.driver.ctx.max_remote_subscriptions_per_link:
            self.count("errors")
            return
        session = msg.get("session")
        subscriber = RemoteSubscriber(self, link, sub_id, int(msg["stream"]), None if session is None else int(session),
                                      self.transport.sink_type)
        with self.driver._lock:
            self.remote[(link.id, sub_id)] = subscriber
            super().add_subscription(subscriber, key)

    def _on_setup(self, link: ControlLink, msg: dict[str, Any]) -> None:
        self.transport.check_setup(link, msg)
        sub: Subscription | None = None
        try:
            sub = self.setup_target(msg)
        finally:
            if sub is None:
                self.transport.refuse_setup(msg)
        if sub is not None:
            self.start_session(self.transport.session_type(self, link, sub, msg))

    def setup_target(self, msg: dict[str, Any]) -> Subscription | None:
        """The subscription a setup message feeds (None: gone, or filtered out); ValueError if impossible."""
        sub = next((s for s in self.driver.subscriptions if s.registration_id == int(msg["sub"])), None)
        term_length, window, join = int(msg["tl"]), int(msg["win"]), int(msg["join"])
        if term_length & (term_length - 1) or not 65536 <= term_length <= 1 << 30 or not 0 < window <= term_length \
                or join < 0 or join % 32:
            raise ValueError("setup with an impossible term length, window or join position")
        if sub is None or sub.is_closed or (sub.session_filter is not None
                                            and sub.session_filter != int(msg["session"])):
            return None
        return sub

    def start_session(self, session: SessionCore) -> None:
        """Add a session's image to its subscription and start feeding it."""
        self.sessions.add(session)
        session.sub._add_image(session.image)
        self.spawn(session.run())

    def describe(self) -> list[str]:
        """One line per listener and connection, for `aeron_compat stat`."""
        lines = [f"serving {endpoint} ({len(li.links)} connections)" for endpoint, li in list(self.listeners.items())]
        lines += [f"connected to {endpoint}" for endpoint in list(self.out_links)]
        return lines

    # --- shutdown ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Close every connection and listener; stop the loop thread (if the driver owns one).

        On the caller's own loop this only starts closing: await `wait_closed()` to finish.
        """
        if self.closed:
            return
        self.closed = True
        if self.thread is None:
            self._close_task = self.loop.create_task(self._aclose())
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._aclose(), self.loop).result(timeout=10)
        if self._owner is not None:
            shared_loop.release(self._owner)

    async def wait_closed(self) -> None:
        """Wait until a close started on the caller's loop has finished."""
        if self._close_task is not None:
            await self._close_task

    async def _aclose(self) -> None:
        current = asyncio.current_task()
        for link in list(self.out_links.values()):
            with contextlib.suppress(Exception):
                await link.aclose()
        for listener in list(self.listeners.values()):
            with contextlib.suppress(Exception):
                await listener.stack.aclose()
        self.listeners.clear()
        pending = [t for t in self.tasks if t is not current]
        for task in pending:
            task.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), 2.0)
        await self.transport.aclose()
