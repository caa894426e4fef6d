"""The native driver: one daemon thread running an asyncio loop that owns the UDP sockets.

Theory: each publication or subscription is a sans-I/O machine (`Publisher`
or `Receiver`) hosted by a `Host`, an asyncio datagram protocol. The loop
thread feeds it datagrams and a timer tick (every `tick_s`) and writes its
outbox to the socket. User threads call `offer` / `poll` on the machine under
the host's lock; an offer writes its datagrams straight to (a duplicate of)
the socket with `send_now_locked`, other calls `kick` the host so the loop
thread sends (a kick already pending is not repeated). As in Aeron, a driver
thread does the receiving and the timers while clients touch the log.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol, cast

Address = tuple[str, int]
SOCKET_BUFFER = 2 * 1024 * 1024


class Machine(Protocol):
    """What a host drives: datagrams in, timers, and an outbox of datagrams to send."""

    outbox: list[tuple[bytes, Address]]

    def on_datagram(self, data: bytes, source: Address, now: int) -> None: ...

    def on_timer(self, now: int) -> None: ...


class Host(asyncio.DatagramProtocol):
    """Runs one machine on one UDP socket inside the driver loop."""

    def __init__(self, driver: NativeDriver, machine: Machine, on_kick: Callable[[int], object] | None = None) -> None:
        self.driver = driver
        self.machine = machine
        self.lock = threading.Lock()
        self.transport: asyncio.DatagramTransport | None = None
        self.local_address: Address = ("0.0.0.0", 0)
        self.closed = False
        self.after_tick: Callable[[int], bool] | None = None
        self._on_kick = on_kick
        self._kick_pending = False
        self._timer: asyncio.TimerHandle | None = None
        self._socket: socket.socket | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)
        sock = transport.get_extra_info("socket")
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            sock.setsockopt(socket.SOL_SOCKET, opt, SOCKET_BUFFER)
        self.local_address = sock.getsockname()[:2]
        self._socket = socket.socket(fileno=os.dup(sock.fileno()))
        self._socket.setblocking(False)
        self._timer = self.driver.loop.call_later(self.driver.tick_s, self._tick)

    def datagram_received(self, data: bytes, addr: tuple[str | Any, ...]) -> None:
        source = (str(addr[0]), int(addr[1]))
        with self.lock:
            self.machine.on_datagram(data, source, time.monotonic_ns())
            self._flush()

    def error_received(self, exc: Exception) -> None:
        """ICMP errors (nobody listening yet) are normal for UDP: the timers retry."""

    def _flush(self) -> None:
        outbox = self.machine.outbox
        if outbox and self.transport is not None:
            sendto = self.transport.sendto
            for data, addr in outbox:
                sendto(data, addr)
        outbox.clear()

    def _tick(self) -> None:
        if self.closed:
            return
        now = time.monotonic_ns()
        with self.lock:
            self.machine.on_timer(now)
            self._flush()
        if self.after_tick is not None and self.after_tick(now):
            self.close_now()
            return
        self._timer = self.driver.loop.call_later(self.driver.tick_s, self._tick)

    def _kicked(self) -> None:
        self._kick_pending = False
        with self.lock:
            if self._on_kick is not None:
                self._on_kick(time.monotonic_ns())
            self._flush()

    def send_now_locked(self) -> None:
        """From a user thread holding `lock`: write the outbox straight to the socket.

        A full socket buffer drops the datagram, which the protocol repairs like any loss.
        """
        sock = self._socket
        if sock is not None:
            for data, addr in self.machine.outbox:
                try:
                    sock.sendto(data, addr)
                except OSError:
                    break
        self.machine.outbox.clear()

    def kick(self) -> None:
        """From any thread: send what the machine has ready (coalesced)."""
        if not self._kick_pending and not self.closed:
            self._kick_pending = True
            self.driver.loop.call_soon_threadsafe(self._kicked)

    def close_now(self) -> None:
        """On the loop thread: stop timers and close the socket."""
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
        if self.transport is not None:
            self.transport.close()
        if self._socket is not None:
            self._socket.close()
            self._socket = None


class NativeDriver:
    """The loop thread; `open` binds a host, `close` stops everything."""

    def __init__(self, tick_s: float = 0.001) -> None:
        self.tick_s = tick_s
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="aeron-native-driver", daemon=True)
        self.hosts: list[Host] = []
        self.closed = False
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def open(self, host: Host, bind: Address) -> Host:
        """Bind a UDP socket at `bind` for `host` (port 0: ephemeral); raises OSError if taken."""

        async def create() -> None:
            await self.loop.create_datagram_endpoint(lambda: host, local_addr=bind, family=socket.AF_INET)

        fut: Future[None] = asyncio.run_coroutine_threadsafe(create(), self.loop)
        fut.result(timeout=10)
        self.hosts.append(host)
        return host

    def run(self, fn: Callable[[], object]) -> None:
        """Run `fn` on the loop thread and wait for it."""

        async def call() -> None:
            fn()

        asyncio.run_coroutine_threadsafe(call(), self.loop).result(timeout=10)

    def close(self) -> None:
        """Stop the loop thread (sockets close with it)."""
        if self.closed:
            return
        self.closed = True

        def stop() -> None:
            for host in self.hosts:
                host.close_now()
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.loop.stop()

        self.loop.call_soon_threadsafe(stop)
        self._thread.join(timeout=10)
        self.loop.close()

    def __enter__(self) -> NativeDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_default: NativeDriver | None = None
_default_lock = threading.Lock()


def default_driver() -> NativeDriver:
    """The process-wide driver used by channels with `transport=native`."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = NativeDriver()
        return _default
