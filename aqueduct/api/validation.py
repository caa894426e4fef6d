"""Typed channels at run time: a `TypeSpec` checks what is sent and converts what arrives (msgspec).

Theory of operation. `channel(T)` gives both halves the spec of T (`spec_for`, cached per type). On the
sending side `check` turns the value into builtins (`msgspec.to_builtins`, channel halves passed through
untouched) and converts those back to T (`msgspec.convert`): a value that does not fit fails there, with
the field path, before anything is queued or sent, and what goes on to the codec is the builtins. On the
receiving side `convert` turns the decoded payload into T. Halves inside a message reach msgspec as
custom objects: `_half_hook` checks that the right kind of half stands where the type says (a Sender
where `Sender[X]` is declared, ...) and gives the half the spec of X, so attachments arrive typed.

msgspec was measured against pydantic and a hand-written checker for a 3-field message (decision
API-1); it covers dataclasses, msgspec.Struct, TypedDict, builtins and their containers,
Optional, unions and enums. A pydantic model is checked and converted by pydantic itself when pydantic is
installed (pydantic_models.py: halves inside a model arrive typed there too).
"""

from __future__ import annotations

import functools
import re
import typing
from collections.abc import Callable
from typing import Any

import msgspec
import msgspec.inspect

from ..errors import ValidationError
from .pydantic_models import RECEIVING, SENDING, error_details, half_schema_method, model_adapter


class TypeSpec:
    """How one message type T is checked before sending and converted after receiving."""

    __slots__ = ("_check_kw", "_convert_kw", "_pydantic", "_wire_kw", "name", "tp")

    def __init__(self, tp: Any) -> None:
        self.tp = tp
        self.name = type_name(tp)
        self._pydantic = model_adapter(tp)
        # msgspec's builtin_types and dec_hook cost as much as the conversion itself: pass them only where
        # the type can hold a half (a custom type, or Any) or a byte string
        halves, raw = _holds(tp)
        self._wire_kw: dict[str, Any] = {"builtin_types": PASS_THROUGH} if halves or raw else {}
        if halves:
            self._wire_kw["enc_hook"] = enc_hook
        self._check_kw: dict[str, Any] = {"dec_hook": _check_hook} if halves else {}
        self._convert_kw: dict[str, Any] = {"dec_hook": _adopt_hook} if halves else {}
        if raw:
            self._check_kw["builtin_types"] = self._convert_kw["builtin_types"] = BYTES

    def check(self, value: Any, where: Callable[[], str]) -> Any:
        """The wire form (builtins, halves kept) of `value` if it is a T; ValidationError otherwise.

        `where()` names the channel; it is called only to word an error."""
        try:
            if (adapter := self._pydantic) is not None:
                # a model instance is not revalidated: its dump is, every field checked and the halves typed
                wire = adapter.dump_python(adapter.validate_python(value, context=SENDING), mode="python",
                                           by_alias=True, warnings=False)
                adapter.validate_python(wire, context=SENDING)
                return wire
            wire = msgspec.to_builtins(value, **self._wire_kw)
            msgspec.convert(wire, self.tp, **self._check_kw)
            return wire
        except (msgspec.ValidationError, TypeError, ValueError) as exc:
            raise _error(exc, where(), self.tp, value, sending=True) from None

    def convert(self, value: Any, where: Callable[[], str]) -> Any:
        """`value` (a decoded payload) as a T, attachments typed; ValidationError if it does not fit."""
        try:
            if self._pydantic is not None:
                return self._pydantic.validate_python(value, context=RECEIVING)
            return msgspec.convert(value, self.tp, **self._convert_kw)
        except (msgspec.ValidationError, TypeError, ValueError, RecursionError) as exc:
            raise _error(exc, where(), self.tp, value, sending=False) from None

    def undecodable(self, exc: Exception, where: Callable[[], str]) -> ValidationError:
        """The ValidationError for a payload the codec refused (`exc`, a CodecError) on a channel of this type."""
        return ValidationError(f"invalid message on {where()} (type {self.name}): at $: {exc}", channel=where(),
                               path="$", expected=self.name, received="a payload the codec refused")


def _holds(tp: Any) -> tuple[bool, bool]:
    """(whether `tp` can hold a channel half, whether it can hold a byte string), from msgspec's type tree."""
    try:
        root = msgspec.inspect.type_info(tp)
    except (TypeError, ValueError):
        return True, True  # (a type msgspec cannot describe: assume the worst, conversion will say more)
    halves = raw = False
    seen: set[int] = set()
    todo: list[Any] = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, msgspec.inspect.CustomType | msgspec.inspect.AnyType):
            halves = True
            raw = raw or isinstance(node, msgspec.inspect.AnyType)
        elif isinstance(node, msgspec.inspect.BytesType | msgspec.inspect.ByteArrayType
                        | msgspec.inspect.MemoryViewType):
            raw = True
        if isinstance(node, msgspec.Struct):  # every msgspec.inspect node and Field is a Struct
            todo.extend(getattr(node, f) for f in node.__struct_fields__)
        elif isinstance(node, tuple):
            todo.extend(node)
    return halves, raw


@functools.lru_cache(maxsize=1024)
def spec_for(tp: Any) -> TypeSpec | None:
    """The spec of `tp`; None for Any (nothing is checked)."""
    if tp is Any or tp is object:
        return None
    return TypeSpec(tp)


def type_name(tp: Any) -> str:
    """A readable name of a type or type expression."""
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__qualname__
    return _HALVES_MODULE.sub("", str(tp).replace("typing.", ""))


_HALVES_MODULE = re.compile(r"aqueduct\.api\.halves\.(?:\w+\.)?")


# ---- halves inside typed messages ----
BYTES: tuple[type, ...] = (bytes, bytearray, memoryview)
"""Byte strings stay byte strings (CBOR carries them as such; msgspec would make them base64 text)."""


class Carried:
    """A capability on its way: `to_builtins` wraps it in this (a pass-through type) so the codec can turn it
    into the half it travels as, at the moment the message is really sent (validation alone creates nothing)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj


PASS_THROUGH: tuple[type, ...] = (*BYTES, Carried)
"""Types `to_builtins` hands on unchanged (the codec encodes them); halves.py adds the half classes."""

_HALF_ORIGINS: dict[type, str] = {}
"""Half class -> what it is called in errors, registered by halves.py (it imports this module)."""


def _unregistered(*_args: Any) -> Any:
    raise RuntimeError("the halves' types are not registered (aqueduct.api.halves is not imported)")


_SPEC_OF: Callable[[Any], TypeSpec | None] = _unregistered
_TYPE_AS: Callable[[Any, TypeSpec | None], None] = _unregistered
_ADOPT: Callable[[Any, TypeSpec | None], None] = _unregistered
"""How a half's message type is read and given (halves/wiring.py registers them: the halves import this module)."""


def register_half_types(
    *classes: type,
    spec_of: Callable[[Any], TypeSpec | None],
    type_as: Callable[[Any, TypeSpec | None], None],
    adopt: Callable[[Any, TypeSpec | None], None],
) -> None:
    """Called once by halves/wiring.py: these classes travel through msgspec untouched and are typed by
    `_adopt_hook`; `spec_of` reads a half's spec, `type_as` gives it one, `adopt` gives it (and its untyped
    local partner) the type a message declares."""
    global PASS_THROUGH, _SPEC_OF, _TYPE_AS, _ADOPT
    PASS_THROUGH = (*PASS_THROUGH, *classes)
    _SPEC_OF, _TYPE_AS, _ADOPT = spec_of, type_as, adopt
    for cls in classes:
        _HALF_ORIGINS[cls] = cls.__name__
        cls.__get_pydantic_core_schema__ = classmethod(_PYDANTIC_HALF)  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=1024)
def _half_field(tp: Any) -> tuple[type, Any, TypeSpec | None]:
    """(the half class, its message type, that type's spec) of a field declared `tp`; TypeError if `tp` is no
    half. Cached per declared type: the hooks below run for every half of every typed message."""
    origin = typing.get_origin(tp) or tp
    if origin not in _HALF_ORIGINS:
        raise TypeError(f"Expected `{type_name(tp)}`")
    args = typing.get_args(tp)
    inner = args[0] if args else Any
    return origin, inner, spec_for(inner)


def _matching_half(tp: Any, obj: Any) -> tuple[Any, Any, TypeSpec | None]:
    origin, inner, spec = _half_field(tp)
    if type(obj) is not origin:  # (a oneshot half is no stand-in for a multishot one, nor the reverse)
        raise TypeError(f"Expected `{_HALF_ORIGINS[origin]}`, got `{type(obj).__name__}`")
    return obj, inner, spec


def _check_hook(tp: Any, obj: Any) -> Any:
    """Sending: a half stands where the type wants one; a typed half must carry the declared type, an
    untyped one takes it (with its local partner: the reply receiver of a request learns the reply type)."""
    if _CAPABILITY is not None and _CAPABILITY.declares(tp):
        return _CAPABILITY.check(tp, obj)
    half, inner, declared = _matching_half(tp, obj)
    spec = _SPEC_OF(half)
    if spec is None:
        _ADOPT(half, declared)
    elif inner is not Any and spec.tp != inner:
        raise TypeError(f"Expected `{type_name(tp)}`, got a channel of `{spec.name}`")
    return half


def _adopt_hook(tp: Any, obj: Any) -> Any:
    """Receiving: a half stands where the type wants one; it takes the declared message type."""
    if _CAPABILITY is not None and _CAPABILITY.declares(tp):
        return _CAPABILITY.arrive(tp, obj)
    half, _, declared = _matching_half(tp, obj)
    if _SPEC_OF(half) is None:
        _TYPE_AS(half, declared)
    return half


def _kind_hook(tp: Any, obj: Any) -> Any:
    """A model built in application code: a half of the right kind stands where the type wants one."""
    return _matching_half(tp, obj)[0]


# ---- capabilities: values that travel as a channel half (aqueduct/services registers them) ----
class Capabilities(typing.Protocol):
    """What a higher floor registers so that its objects travel inside messages as channel halves."""

    def declares(self, tp: Any) -> bool:
        """Whether a field declared as `tp` holds a capability."""
        ...

    def is_capability(self, obj: Any) -> bool:
        """Whether `obj` (a value being sent) travels as a capability."""
        ...

    def check(self, tp: Any, obj: Any) -> Any:
        """Sending: `obj` (a `Carried`) fits a field declared `tp`: the object; TypeError otherwise."""
        ...

    def arrive(self, tp: Any, half: Any) -> Any:
        """Receiving: what a half that arrived in a field declared `tp` becomes; TypeError if it does not fit."""
        ...

    def to_half(self, obj: Any) -> Any:
        """The half a capability travels as (called by the codec as the message is encoded)."""
        ...

    def message_type(self, tp: Any) -> Any:
        """The type of the messages on the channel a field declared `tp` travels as (for its JSON Schema)."""
        ...


_CAPABILITY: Capabilities | None = None


def register_capabilities(capabilities: Capabilities) -> None:
    """Called once by aqueduct.services: its objects may stand in messages (as channel halves)."""
    global _CAPABILITY
    _CAPABILITY = capabilities


def capabilities() -> Capabilities | None:
    """The registered capabilities (the codec asks), or None."""
    return _CAPABILITY


def enc_hook(obj: Any) -> Any:
    """msgspec's `enc_hook` for values that hold capabilities: each travels `Carried` to the codec."""
    if _CAPABILITY is not None and _CAPABILITY.is_capability(obj):
        return Carried(obj)
    raise TypeError(f"Encoding objects of type {type(obj).__name__} is unsupported")


_PYDANTIC_HALF = half_schema_method(_check_hook, _adopt_hook, _kind_hook)
"""The half classes' `__get_pydantic_core_schema__` (pydantic_models.py)."""


# ---- errors ----
_MSGSPEC_ERROR = re.compile(r"(?P<what>.*?)(?: - at `(?P<path>[^`]*)`)?$", re.DOTALL)
_EXPECTED = re.compile(r"Expected `(?P<expected>[^`]*)`(?:, got `(?P<got>[^`]*)`)?")


def _error(exc: Exception, where: str, tp: Any, value: Any, *, sending: bool) -> ValidationError:
    type_label = type_name(tp)
    expected: str | None
    got: str | None
    if (pydantic := error_details(exc, tp, type_name)) is not None:
        what, path, expected, got = pydantic
    else:
        text = str(exc)
        match = _MSGSPEC_ERROR.match(text)
        what, path = (match["what"], match["path"] or "$") if match else (text, "$")
        expected = got = None
        found = _EXPECTED.search(what)
        if found:
            expected, got = found["expected"], found["got"]
        if got is None:
            got = type(value).__name__ if path == "$" else "a value that does not fit"
    verb = "cannot send on" if sending else "invalid message on"
    message = f"{verb} {where} (type {type_label}): at {path}: {what}"
    return ValidationError(message, channel=where, path=path, expected=expected or type_label, received=got)

