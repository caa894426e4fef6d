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

Declared errors (`errors=[...]`) keep their fields. Each is read when the interface class is made
(`declared_error`): an exception with a constructor of its own travels as a msgspec Struct of that constructor's
typed parameters (tagged with its name, so its schema is part of the interface's, like a message type's), its
values read from the attributes of the same names; one with the built-in constructor travels as its message.
A constructor whose parameters could not travel (no annotation, `*args`, a type msgspec cannot carry) is refused
there and then with a ConfigError that says what is needed. A method's reply then has a `fields` member, the
union of those structs; the caller remakes the exception from it (stub.py, `raised`; decision SVC-6).
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
            for error in cls._aq_errors:
                declared_error(error, cls.__qualname__)  # (refused here, at class creation, if it cannot travel)


ERROR_TAG = "error"
"""The tag field of a declared error's fields struct (its value: the exception's qualified name)."""


@dataclass(frozen=True, slots=True)
class DeclaredError:
    """How one declared exception type travels: the struct of its constructor's parameters (None: its message)."""

    cls: type[BaseException]
    fields: type[msgspec.Struct] | None
    keyword_only: frozenset[str]

    def encode(self, exc: BaseException) -> msgspec.Struct | str:
        """`exc`'s fields struct (read from its attributes), or why it cannot be made (an attribute missing)."""
        assert self.fields is not None
        values = {}
        for name in self.fields.__struct_fields__:
            if not hasattr(exc, name):
                return (f"declared error {self.cls.__qualname__} keeps no attribute {name!r} for its constructor's "
                        f"parameter of that name (a declared error travels as its parameters, read from its "
                        f"attributes; it said: {exc})")
            values[name] = getattr(exc, name)
        return self.fields(**values)

    def decode(self, message: str, fields: msgspec.Struct | None) -> BaseException:
        """The exception remade from what arrived (its fields, or its message); TypeError if it cannot be."""
        if self.fields is None:
            return self.cls(message)
        if type(fields) is not self.fields:
            raise TypeError(f"no fields of {self.cls.__qualname__} arrived")
        args = [getattr(fields, n) for n in self.fields.__struct_fields__ if n not in self.keyword_only]
        kwargs = {n: getattr(fields, n) for n in self.keyword_only}
        return self.cls(*args, **kwargs)


_DECLARED: dict[type[BaseException], DeclaredError] = {}


def declared_error(cls: type[BaseException], interface: str = "") -> DeclaredError:
    """How `cls`, declared by an interface, travels (read once); ConfigError saying what is needed if it cannot."""
    found = _DECLARED.get(cls)
    if found is not None:
        return found
    name = cls.__qualname__
    where = f"{interface}: declared error {name}" if interface else f"declared error {name}"
    need = ("a declared error travels as its constructor's parameters, each annotated with a type a message can "
            "carry and kept as an attribute of the same name (or make it a dataclass)")
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        raise ConfigError(f"{where} is not an Exception subclass")
    owner = next(k for k in cls.__mro__ if "__init__" in vars(k))
    if owner.__module__ == "builtins":  # the built-in constructor: its message is all there is
        found = _DECLARED[cls] = DeclaredError(cls, None, frozenset())
        return found
    init = vars(owner)["__init__"]
    try:
        hints = typing.get_type_hints(init, include_extras=True)
    except Exception as exc:  # (a forward reference that does not resolve, ...)
        raise ConfigError(f"{where}: its constructor's annotations do not resolve ({exc}); {need}") from None
    fields: list[Any] = []
    keyword_only: set[str] = set()
    for i, p in enumerate(inspect.signature(init).parameters.values()):
        if i == 0:
            continue  # self
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            star = "*" if p.kind is p.VAR_POSITIONAL else "**"
            raise ConfigError(f"{where}: its constructor takes {star}{p.name}, which cannot travel; {need}")
        if p.name not in hints:
            raise ConfigError(f"{where}: its constructor's parameter {p.name!r} has no type annotation; {need}")
        if p.name == ERROR_TAG:
            raise ConfigError(f"{where}: a parameter may not be called {ERROR_TAG!r} (the tag of its fields)")
        if p.kind is p.KEYWORD_ONLY:
            keyword_only.add(p.name)
        fields.append((p.name, hints[p.name]) if p.default is p.empty else (p.name, hints[p.name], p.default))
    try:
        struct = msgspec.defstruct(name, fields, kw_only=True, tag=name, tag_field=ERROR_TAG,
                                   module=cls.__module__)
        msgspec.json.schema(struct)  # (a type msgspec cannot carry is refused here, not at the first raise)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: its constructor's parameters cannot travel ({exc}); {need}") from None
    found = _DECLARED[cls] = DeclaredError(cls, struct, frozenset(keyword_only))
    return found


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
    errors: dict[type[BaseException], DeclaredError]
    """The interface's declared errors that travel with fields (their structs are the reply's `fields` union)."""

    def failed(self, failure: Failure, exc: BaseException) -> msgspec.Struct:
        """The reply carrying `failure`, and `exc`'s fields when it is a declared error that has them."""
        declared = self.errors.get(type(exc))
        if declared is None:
            return self.reply(error=failure)
        fields = declared.encode(exc)
        if isinstance(fields, str):
            return self.reply(error=Failure(failure.type, fields, failure.method))
        return self.reply(error=failure, fields=fields)

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
    errors = {e: d for e in interface_class(cls)._aq_errors if (d := declared_error(e)).fields is not None}
    reply_fields: list[Any] = [("value", result | None, None), ("error", Failure | None, None)]
    if errors:
        structs: list[Any] = [d.fields for d in errors.values()]
        reply_fields.append(("fields", reduce(lambda a, b: a | b, structs) | None, None))
    reply = msgspec.defstruct(f"{qual}.reply", reply_fields, omit_defaults=True, module=cls.__module__)
    call = msgspec.defstruct(qual, [("reply", OneshotSender[reply]), *fields,  # type: ignore[valid-type]
                                    ("meta", CallMeta | None, None)],
                             tag=name, tag_field="method", kw_only=True, omit_defaults=True, module=cls.__module__)
    return Method(name, tuple(params), defaults, call, reply, result, errors)


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
