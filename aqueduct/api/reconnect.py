"""Reconnection: `async for conn in aqueduct.reconnecting(url, backoff=Backoff(...), ca=...)`.

Theory of operation. Each turn of the loop is one connection's life, as with
`websockets.connect` used as an iterator. The iterator connects, retrying a
failed attempt after a backoff delay (exponential from `initial` to `max`,
with full jitter unless switched off) and reporting every attempt to
`on_attempt`; it yields the `Connection`, and when the loop body asks for the
next one it closes the old connection (if still open) and connects again.
The body is the application's callback that re-opens its channels on each
new connection; nothing of the old connection is replayed: its channels
ended with `ConnectionLost`, which is what the body sees and reacts to,
usually by `continue`.

One ticket store is shared by all attempts, so a reconnect resumes with
0-RTT wherever the server still accepts its ticket. The backoff starts again
from `initial` after every connection that was made. Only failures that a
later attempt can cure are retried (`ConnectError` and other
`ConnectionLost`s); a `ConfigError` or a codec mismatch is raised at once,
as is the last error once `max_attempts` attempts in a row have failed.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

from ..errors import AqueductError, ConnectError, ConnectionLost
from ..quic.tickets import MemoryTicketStore
from .connection import CodecMismatch, Connection
from .endpoints import ConnectOptions, connect
from .halves import Sender
from .oneof import OneOf

if TYPE_CHECKING:
    from typing_extensions import Unpack

T = TypeVar("T")
C = TypeVar("C")

log = logging.getLogger("aqueduct.reconnect")


@dataclass(frozen=True)
class Backoff:
    """Delays between failed connection attempts: `initial * multiplier**n`, capped at `max` seconds.

    With `jitter` each delay is drawn uniformly from [0, delay] ("full jitter"), so clients that lost the
    same server do not all come back at the same instant."""

    initial: float = 0.1
    max: float = 30.0
    multiplier: float = 2.0
    jitter: bool = True

    def __post_init__(self) -> None:
        if not (0 < self.initial <= self.max) or self.multiplier < 1:
            raise ValueError(f"backoff needs 0 < initial <= max and multiplier >= 1, got {self}")

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        """The delay before each retry, endlessly."""
        rng = rng or random.Random()
        delay = self.initial
        while True:
            yield rng.uniform(0, delay) if self.jitter else delay
            delay = min(self.max, delay * self.multiplier)


@dataclass(frozen=True)
class Attempt:
    """One connection attempt, as reported to `on_attempt`."""

    number: int
    """1 for the first attempt after start or after a lost connection, then 2, 3, ..."""
    url: str
    error: AqueductError | None
    """Why it failed; None when it connected."""
    retry_in: float | None
    """Seconds until the next attempt (None: connected, or no further attempt)."""

    def __str__(self) -> str:
        if self.error is None:
            return f"attempt {self.number} to {self.url}: connected"
        then = f"retrying in {self.retry_in:.2f} s" if self.retry_in is not None else "giving up"
        return f"attempt {self.number} to {self.url} failed: {self.error}; {then}"


def _retryable(exc: AqueductError) -> bool:
    return isinstance(exc, ConnectError | ConnectionLost) and not isinstance(exc, CodecMismatch)


@overload
def reconnecting(
    url: str, *, entrypoint: None = None, backoff: Backoff | None = ...,
    on_attempt: Callable[[Attempt], object] | None = ..., max_attempts: int | None = ...,
    rng: random.Random | None = ..., **connect_kwargs: Unpack[ConnectOptions],
) -> Reconnecting[Sender[Any]]: ...
@overload
def reconnecting(
    url: str, *, entrypoint: type[T] | OneOf[T], backoff: Backoff | None = ...,
    on_attempt: Callable[[Attempt], object] | None = ..., max_attempts: int | None = ...,
    rng: random.Random | None = ..., **connect_kwargs: Unpack[ConnectOptions],
) -> Reconnecting[Sender[T]]: ...
def reconnecting(
    url: str,
    *,
    entrypoint: Any = None,
    backoff: Backoff | None = None,
    on_attempt: Callable[[Attempt], object] | None = None,
    max_attempts: int | None = None,
    rng: random.Random | None = None,
    **connect_kwargs: Any,
) -> Reconnecting[Any]:
    """Connections to `url`, one per loop turn, reconnecting with `backoff`; `connect`'s keywords pass through.

    `entrypoint=T`: each connection is a `Connection[Sender[T]]`, as `connect(url, entrypoint=T)` gives.

    `on_attempt(attempt)` hears of every attempt (default: a log line at INFO, failures at WARNING).
    `max_attempts`: failed attempts in a row before the last error is raised (default: never give up).
    `aclose()` (or leaving `async with`) closes the current connection and ends the iteration."""
    if entrypoint is not None:
        connect_kwargs["entrypoint"] = entrypoint
    return Reconnecting(url, backoff=backoff, on_attempt=on_attempt, max_attempts=max_attempts, rng=rng,
                        **connect_kwargs)


class Reconnecting(AsyncIterator[Connection[C]], Generic[C]):
    """The async iterator (and async context manager) that `reconnecting` returns."""

    def __init__(
        self,
        url: str,
        *,
        backoff: Backoff | None = None,
        on_attempt: Callable[[Attempt], object] | None = None,
        max_attempts: int | None = None,
        rng: random.Random | None = None,
        **connect_kwargs: Any,
    ) -> None:
        self.url = url
        self.backoff = backoff or Backoff()
        self._on_attempt = on_attempt or _log_attempt
        self._max_attempts = max_attempts
        self._rng = rng or random.Random()
        connect_kwargs.setdefault("session_ticket_store", MemoryTicketStore())
        self._kwargs = connect_kwargs
        self.connection: Connection[C] | None = None
        """The connection of the current loop turn."""
        self.connections = 0
        """Connections made so far."""
        self._closed = False

    def __aiter__(self) -> Reconnecting[C]:
        return self

    async def __anext__(self) -> Connection[C]:
        await self._close_current()
        if self._closed:
            raise StopAsyncIteration
        delays = self.backoff.delays(self._rng)
        number = 0
        while True:
            number += 1
            try:
                conn = cast("Connection[C]", await connect(self.url, **self._kwargs))
            except AqueductError as exc:
                last = self._max_attempts is not None and number >= self._max_attempts
                if not _retryable(exc) or last:
                    self._on_attempt(Attempt(number, self.url, exc, None))
                    raise
                delay = next(delays)
                self._on_attempt(Attempt(number, self.url, exc, delay))
                await asyncio.sleep(delay)
                continue
            self._on_attempt(Attempt(number, self.url, None, None))
            self.connection = conn
            self.connections += 1
            return conn

    async def _close_current(self) -> None:
        conn, self.connection = self.connection, None
        if conn is not None and not conn.is_closed:
            await conn.close()

    async def aclose(self) -> None:
        """Close the current connection; the iteration ends."""
        self._closed = True
        await self._close_current()

    async def __aenter__(self) -> Reconnecting[C]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _log_attempt(attempt: Attempt) -> None:
    log.log(logging.INFO if attempt.error is None else logging.WARNING, "%s", attempt)
