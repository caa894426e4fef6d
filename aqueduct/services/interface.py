"""Service interfaces: `class Calculator(aqueduct.Service)` with typed async methods, and what a call of each
method is on the wire.

Theory of operation. An interface is a class whose own bases include `Service` (its methods' bodies are
`...`); an implementation subclasses the interface. `interface_of(cls)` reads the interface once
(`typing.get_type_hints` of every public coroutine method, on first use, so forward references to
interfaces defined later resolve) into an `Interface`: per method a msgspec Struct for its call message
(tagged with the method's name in the field `method`; one field per parameter, the `reply` oneshot, and an
optional `meta`) and one for its reply (`value`, or `error`: a `Failure`). The interface's call type is the
tagged union of its methods' call structs: a service's channel is a channel of that type, so validation,
conversion and the schema agreed at connect are the typed channels' own (decisions SVC-2, SVC-8).
"""

from __future__ import annotations

import abc
import inspect
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from functools import reduce
from typing import Any, ClassVar

import msgspec

from ..api.halves import OneshotSender
from ..errors import ConfigError

RESERVED = ("reply", "meta", "method")
"""Field names of a call message that are not parameters (a method may not take a parameter so named)."""


class Service(abc.ABC):  # noqa: B024  (the interfaces have the abstract methods)
    """Base of service interfaces: `class Calculator(aqueduct.Service)` with typed `async def` methods.

    Every public coroutine method of the interface is a remote method; mark each `@abc.abstractmethod` (its
    body `...`) so that mypy accepts the empty body and an implementation that forgets one cannot be made.

    Implement one by subclassing the interface (`class Calc(Calculator)`); serve it with
    `aqueduct.serve(..., service=Calc())` and call it through `aqueduct.connect(..., service=Calculator)`'s
    `conn.service`. An implementation passed in a message (argument, result or field) travels as a
    capability and arrives as a stub of its interface. `class Calculator(aqueduct.Service,
    errors=[DivisionByZero])` declares exception types that reach callers as themselves (others arrive as
    `aqueduct.RemoteError`)."""

    __slots__ = ("__weakref__",)
    _aq_errors: ClassVar[tuple[type[BaseException], ...]] = ()

    def __init_subclass__(cls, errors: Iterable[type[BaseException]] = (), **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if Service in cls.__bases__:
            cls._aq_errors = tuple(errors)


class Failure(msgspec.Struct, omit_defaults=True):
    """An exception raised by a service method, as it travels back to the caller."""

    type: str
    message: str
    method: str


class CallMeta(msgspec.Struct, omit_defaults=True):
    """What travels with a call besides its arguments: the time left (seconds), the caller's metadata, and how
    deep the call is nested (0: made outside any service method; else one more than the call being served)."""

    timeout: float | None = None
    metadata: dict[str, str] = msgspec.field(default_factory=dict)
    depth: int = 0


@dataclass(frozen=True, slots=True)
class Method:
    """One method of an interface: its parameters, its call and reply message types."""

    name: str
    params: tuple[str, ...]
    defaults: dict[str, Any]
    call: type[msgspec.Struct]
    reply: type[msgspec.Struct]
    result: Any

    def fields(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's fields from a stub call's arguments (TypeError for a wrong call, as Python would)."""
        if len(args) > len(self.params):
            raise TypeError(f"{self.name}() takes {len(self.params)} arguments, {len(args)} given")
        fields = dict(zip(self.params, args, strict=False))
        for key, value in kwargs.items():
            if key not in self.params or key in fields:
                raise TypeError(f"{self.name}() got an unexpected or repeated argument {key!r}")
            fields[key] = value
        if len(fields) < len(self.params):
            for name in self.params:
                if name not in fields:
                    if name not in self.defaults:
                        raise TypeError(f"{self.name}() missing argument {name!r}")
                    fields[name] = self.defaults[name]
        return fields


class Interface:
    """What a service interface is made of: its methods and the type of the calls on its channel."""

    __slots__ = ("by_call", "call_type", "cls", "errors", "methods", "name")

    def __init__(self, cls: type[Service]) -> None:
        self.cls = cls
        self.name = cls.__qualname__
        self.methods: dict[str, Method] = {}
        for name, fn in sorted(vars(cls).items()):
            if not name.startswith("_") and inspect.iscoroutinefunction(fn):  # (abstract ones too)
                self.methods[name] = _method(cls, name, fn)
        if not self.methods:
            raise ConfigError(f"service interface {self.name} has no public async methods")
        self.by_call = {m.call: m for m in self.methods.values()}
        calls = [m.call for m in self.methods.values()]
        self.call_type: Any = reduce(lambda a, b: a | b, calls) if len(calls) > 1 else calls[0]  # type: ignore[arg-type,return-value]
        """The message type of this service's channel: the union of its methods' call structs."""
        self.errors = {e.__qualname__: e for e in cls._aq_errors}

    def __repr__(self) -> str:
        return f"<Interface {self.name}: {', '.join(self.methods)}>"


def _method(cls: type, name: str, fn: Any) -> Method:
    hints = typing.get_type_hints(fn, include_extras=True)
    sig = inspect.signature(fn)
    params: list[str] = []
    defaults: dict[str, Any] = {}
    fields: list[Any] = []
    for i, p in enumerate(sig.parameters.values()):
        if i == 0:
            continue  # self
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.POSITIONAL_ONLY):
            raise ConfigError(f"{cls.__qualname__}.{name}: *args and **kwargs cannot travel in a call")
        if p.name in RESERVED:
            raise ConfigError(f"{cls.__qualname__}.{name}: a parameter may not be called {p.name!r}")
        if p.name not in hints:
            raise ConfigError(f"{cls.__qualname__}.{name}: parameter {p.name!r} has no type annotation")
        params.append(p.name)
        if p.default is not p.empty:
            defaults[p.name] = p.default
            fields.append((p.name, hints[p.name], p.default))
        else:
            fields.append((p.name, hints[p.name]))
    if "return" not in hints:
        raise ConfigError(f"{cls.__qualname__}.{name}: the result has no type annotation")
    result = hints["return"]
    qual = f"{cls.__qualname__}.{name}"
    reply = msgspec.defstruct(f"{qual}.reply", [("value", result | None, None),
                                                 ("error", Failure | None, None)],
                              omit_defaults=True, module=cls.__module__)
    call = msgspec.defstruct(qual, [("reply", OneshotSender[reply]), *fields,  # type: ignore[valid-type]
                                    ("meta", CallMeta | None, None)],
                             tag=name, tag_field="method", kw_only=True, omit_defaults=True, module=cls.__module__)
    return Method(name, tuple(params), defaults, call, reply, result)


_INTERFACES: dict[type, Interface] = {}


def interface_class(cls: type) -> type[Service]:
    """The interface `cls` implements (or is): the nearest class in its MRO whose own bases include Service."""
    for klass in cls.__mro__:
        if Service in klass.__bases__:
            return klass
    raise ConfigError(f"{cls.__qualname__} is not a service (subclass an aqueduct.Service interface)")


def interface_of(cls: type) -> Interface:
    """The interface `cls` implements (or is), read once."""
    iface_cls = interface_class(cls)
    found = _INTERFACES.get(iface_cls)
    if found is None:
        found = _INTERFACES[iface_cls] = Interface(iface_cls)
    return found
