"""Declared errors keep their fields: an exception an interface declares travels with its constructor's typed
parameters (a schema of its own, like a message type) and arrives as itself, attributes and all; a declaration
that could not travel is refused when the interface class is made, saying what is needed."""

from __future__ import annotations

import abc
import dataclasses
from typing import Any

import pytest

import aqueduct
from aqueduct.quic.certs import DevCerts
from tests.api.conftest import guard


class Overflow(Exception):
    """A declared error whose constructor takes other arguments than a message."""

    def __init__(self, limit: int, got: int) -> None:
        super().__init__(f"{got} > {limit}")
        self.limit, self.got = limit, got


@dataclasses.dataclass
class Refused(Exception):
    """A dataclass exception: its fields are what travels."""

    reason: str
    retry_after: float | None = None


class Plain(Exception):
    """No constructor of its own: its message travels."""


class Bounded(aqueduct.Service, errors=[Overflow, Refused, Plain]):
    @abc.abstractmethod
    async def take(self, n: int) -> int: ...


class BoundedImpl(Bounded):
    async def take(self, n: int) -> int:
        if n > 10:
            raise Overflow(10, n)
        if n < 0:
            raise Refused("negative", retry_after=1.5)
        if n == 0:
            raise Plain("nothing to take")
        return n


async def _call(certs: DevCerts, n: int) -> int:
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, service=BoundedImpl()) as server:
        host, port = server.address
        async with aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca, service=Bounded) as conn:
            result: int = await guard(conn.service.take(n))
            return result


async def test_a_declared_error_with_constructor_arguments_arrives_with_its_attributes(certs: DevCerts) -> None:
    with pytest.raises(Overflow) as raised:
        await _call(certs, 42)
    assert (raised.value.limit, raised.value.got) == (10, 42)
    assert str(raised.value) == "42 > 10"


async def test_a_dataclass_error_arrives_with_its_fields(certs: DevCerts) -> None:
    with pytest.raises(Refused) as raised:
        await _call(certs, -1)
    assert raised.value == Refused("negative", retry_after=1.5)


async def test_an_error_without_a_constructor_of_its_own_arrives_with_its_message(certs: DevCerts) -> None:
    with pytest.raises(Plain, match="nothing to take"):
        await _call(certs, 0)


def test_the_declared_errors_are_part_of_the_interface_schema() -> None:
    from aqueduct.api.schema import canonical
    from aqueduct.services.interface import interface_of

    schema = canonical(interface_of(Bounded).call_type).decode()
    assert '"limit"' in schema and '"got"' in schema and '"retry_after"' in schema


def _declare(*errors: type[BaseException]) -> type[aqueduct.Service]:
    class Declaring(aqueduct.Service, errors=errors):
        @abc.abstractmethod
        async def f(self) -> None: ...

    return Declaring


def test_an_unannotated_constructor_parameter_is_refused_at_class_creation() -> None:
    class Untyped(Exception):
        def __init__(self, limit, got):  # type: ignore[no-untyped-def]
            super().__init__(limit, got)

    with pytest.raises(aqueduct.ConfigError, match=r"Untyped.*'limit'.*annotation"):
        _declare(Untyped)


def test_a_constructor_with_star_args_is_refused_at_class_creation() -> None:
    class Variadic(Exception):
        def __init__(self, *parts: str) -> None:
            super().__init__(*parts)

    with pytest.raises(aqueduct.ConfigError, match=r"Variadic.*\*parts"):
        _declare(Variadic)


def test_a_parameter_type_that_cannot_travel_is_refused_at_class_creation() -> None:
    class Opaque(Exception):
        def __init__(self, handle: Any) -> None:
            super().__init__("opaque")
            self.handle = handle

    class Strange(Exception):
        def __init__(self, where: type[int]) -> None:
            super().__init__("strange")
            self.where = where

    _declare(Opaque)  # (Any travels as whatever the codec carries)
    with pytest.raises(aqueduct.ConfigError, match=r"Strange.*cannot travel"):
        _declare(Strange)


class Forgetful(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"code {code}")  # (no self.code: nothing to send the field from)


class Forgets(aqueduct.Service, errors=[Forgetful]):
    @abc.abstractmethod
    async def f(self) -> None: ...


class ForgetsImpl(Forgets):
    async def f(self) -> None:
        raise Forgetful(7)


async def test_a_declared_error_that_keeps_no_attribute_for_a_parameter_says_so(certs: DevCerts) -> None:
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, service=ForgetsImpl()) as server:
        host, port = server.address
        async with aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca, service=Forgets) as conn:
            with pytest.raises(aqueduct.RemoteError, match=r"Forgetful.*attribute 'code'"):
                await guard(conn.service.f())
