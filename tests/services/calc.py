"""The services under test: a calculator with a streaming method and a listener callback (as in the issue)."""

from __future__ import annotations

import abc
import asyncio

import msgspec

import aqueduct
from aqueduct import Receiver


class DivisionByZero(Exception):
    """Declared by Calculator: reaches callers as itself."""


class Listener(aqueduct.Service):
    @abc.abstractmethod
    async def notify(self, text: str) -> None: ...


class Calculator(aqueduct.Service, errors=[DivisionByZero]):
    @abc.abstractmethod
    async def add(self, a: int, b: int) -> int: ...

    @abc.abstractmethod
    async def div(self, a: int, b: int) -> float: ...

    @abc.abstractmethod
    async def count(self, upto: int) -> Receiver[int]: ...

    @abc.abstractmethod
    async def subscribe(self, listener: Listener) -> None: ...

    @abc.abstractmethod
    async def fail(self, text: str) -> None: ...

    @abc.abstractmethod
    async def wait(self, key: str) -> str: ...

    @abc.abstractmethod
    async def echo_listener(self, listener: Listener) -> Listener: ...

    @abc.abstractmethod
    async def drop(self, listener: Listener) -> None: ...

    @abc.abstractmethod
    async def broadcast(self, subs: list[Subscription]) -> int: ...


class Subscription(msgspec.Struct):
    """A message type with a service in a field."""

    topic: str
    listener: Listener


class Calc(Calculator):
    def __init__(self) -> None:
        self.listeners: list[Listener] = []
        self.running: dict[str, asyncio.Event] = {}
        self.started: asyncio.Queue[str] = asyncio.Queue()
        self.cancelled: asyncio.Queue[str] = asyncio.Queue()

    async def add(self, a: int, b: int) -> int:
        return a + b

    async def div(self, a: int, b: int) -> float:
        if b == 0:
            raise DivisionByZero(f"{a} / 0")
        return a / b

    async def count(self, upto: int) -> Receiver[int]:
        tx, rx = aqueduct.channel(int)

        async def feed() -> None:
            async with tx:
                for i in range(upto):
                    await tx.send(i)

        self._feeding = asyncio.ensure_future(feed())
        return rx

    async def subscribe(self, listener: Listener) -> None:
        self.listeners.append(listener)
        await listener.notify("subscribed")

    async def fail(self, text: str) -> None:
        raise KeyError(text)

    async def wait(self, key: str) -> str:
        event = self.running[key] = asyncio.Event()
        self.started.put_nowait(key)
        try:
            await event.wait()
        except asyncio.CancelledError:
            self.cancelled.put_nowait(key)
            raise
        return key

    async def echo_listener(self, listener: Listener) -> Listener:
        return listener

    async def drop(self, listener: Listener) -> None:
        pass

    async def broadcast(self, subs: list[Subscription]) -> int:
        for sub in subs:
            await sub.listener.notify(sub.topic)
        return len(subs)


class Collect(Listener):
    def __init__(self) -> None:
        self.got: asyncio.Queue[str] = asyncio.Queue()

    async def notify(self, text: str) -> None:
        self.got.put_nowait(text)
