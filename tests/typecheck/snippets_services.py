# ruff: noqa: F841, E501, B007, B018  (mypy snippets: names bound only to be type-checked, long error markers)
# Checked by tests/typecheck/test_mypy.py, never run: each line whose comment starts with "E:" must get a
# mypy error containing the rest of that comment, and no other line may get one.
from __future__ import annotations

import abc
from typing import Any, assert_type

import aqueduct
from aqueduct import Receiver


class Listener(aqueduct.Service):
    @abc.abstractmethod
    async def notify(self, text: str) -> None: ...


class NotFound(Exception):
    pass


class Calculator(aqueduct.Service, errors=[NotFound]):
    @abc.abstractmethod
    async def add(self, a: int, b: int) -> int: ...

    @abc.abstractmethod
    async def count(self, upto: int) -> Receiver[int]: ...

    @abc.abstractmethod
    async def subscribe(self, listener: Listener) -> None: ...


class Calc(Calculator):
    async def add(self, a: int, b: int) -> int:
        return a + b

    async def count(self, upto: int) -> Receiver[int]:
        return aqueduct.channel(int)[1]

    async def subscribe(self, listener: Listener) -> None:
        await listener.notify("hi")


class HalfCalc(Calculator):
    async def add(self, a: int, b: int) -> int:
        return a + b


class MyListener(Listener):
    async def notify(self, text: str) -> None:
        print(text)


class Wrong(Calculator):
    async def add(self, a: str, b: int) -> int:  # E: Argument 1 of "add" is incompatible with supertype
        return 0


async def client(url: str) -> None:
    async with aqueduct.connect(url, ca="ca.pem", service=Calculator) as conn:
        assert_type(conn, aqueduct.ServiceConnection[Calculator])
        calc = conn.service
        assert_type(calc, Calculator)
        n: int = await calc.add(1, 2)
        s: str = await calc.add(1, 2)  # E: Incompatible types in assignment (expression has type "int", variable has type "str")
        await calc.add("1", 2)  # E: Argument 1 to "add" of "Calculator" has incompatible type "str"; expected "int"
        await calc.add(1)  # E: Missing positional argument "b" in call to "add" of "Calculator"
        await calc.multiply(1, 2)  # E: "Calculator" has no attribute "multiply"
        async for i in await calc.count(3):
            assert_type(i, int)
        async for j in calc.count(3):  # E: "Coroutine[Any, Any, Receiver[int]]" has no attribute "__aiter__"
            pass
        await calc.subscribe(MyListener())
        await calc.subscribe(Calc())  # E: Argument 1 to "subscribe" of "Calculator" has incompatible type "Calc"; expected "Listener"
        calc.add(1, 2) + 1  # E: Unsupported operand types for + ("Coroutine[Any, Any, int]" and "int")
        with aqueduct.call_options(timeout=2.0, metadata={"tenant": "a"}):
            assert_type(await calc.add(1, 2), int)
        assert_type(conn.entrypoint, aqueduct.Sender[Any])
    async with aqueduct.connect(url, service=Calc) as impl_conn:
        assert_type(impl_conn.service, Calc)
    aqueduct.connect(url, service=int)  # E: Value of type variable "S" of "connect" cannot be "int"
    async with aqueduct.connect(url, entrypoint=int) as plain:
        assert_type(plain.entrypoint, aqueduct.Sender[int])
        plain.service  # E: has no attribute "service"


async def server() -> None:
    async with aqueduct.serve("::1", 0, cert="c", key="k", service=Calc()) as srv:
        assert_type(srv, aqueduct.Server[Receiver[Any]])
    aqueduct.serve("::1", 0, cert="c", key="k", service=HalfCalc())  # E: Cannot instantiate abstract class "HalfCalc" with abstract attributes "count" and "subscribe"
    aqueduct.serve("::1", 0, cert="c", key="k", service=Calculator)  # E: No overload variant of "serve" matches


async def interceptor(call: aqueduct.CallInfo, proceed: Any) -> Any:
    assert_type(call.method, str)
    assert_type(call.metadata, dict[str, str])
    if call.peer_identity is None:
        raise PermissionError("no certificate")
    return await proceed()


async def with_interceptors(url: str) -> None:
    async with aqueduct.connect(url, service=Calculator, interceptors=[interceptor], max_concurrent_calls=8):
        pass
    aqueduct.connect(url, service=Calculator, max_concurrent_calls="8")  # E: No overload variant of "connect" matches


def raised(exc: aqueduct.RemoteError) -> str:
    return exc.type_name + exc.remote_message + exc.method
