"""Pydantic models as message types, when pydantic is installed (the `pydantic` extra); nothing here imports it
up front, so the library runs without it.

Theory of operation. A channel typed with a pydantic model is checked and converted by pydantic itself
(validation.py's TypeSpec holds the model's TypeAdapter). A channel half is a field type pydantic knows
without `arbitrary_types_allowed`: validation.py gives the half classes `__get_pydantic_core_schema__`
(made by `half_schema_method` from its own hooks), a plain validator that passes the half through,
serialised as itself (the codec carries it), and described in JSON Schema as api/schema.py describes a
half (schema.py hands over its `describe`: `describe_messages_with`); this module imports neither. The
validator does what validation.py's msgspec hooks do, told which by the validation context: sending
(`SENDING`) checks the half's kind and message type, or gives an untyped half (and its local partner) the
declared type; receiving (`RECEIVING`) gives the arrived half the declared type; anything else (building a
model in application code) checks the kind only. Pydantic's errors become `aqueduct.ValidationError` with the
field path (`$.items[2].qty`), the declared type there and the received one.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

SENDING: dict[str, str] = {"aqueduct": "sending"}
RECEIVING: dict[str, str] = {"aqueduct": "receiving"}
"""Validation contexts: what the half validator does (see the module docstring)."""

Hook = Callable[[Any, Any], Any]
"""(annotation, half) -> the half, or TypeError: validation.py's checks of a half where a type wants one."""
_describers: list[Callable[[Any], dict[str, Any]]] = []
"""api/schema.py's `describe`, once it is imported: how a half's message type is described."""


def describe_messages_with(describe: Callable[[Any], dict[str, Any]]) -> None:
    """Called once by api/schema.py: the JSON Schema of a half's message type is `describe(type)`."""
    _describers[:] = [describe]


def model_adapter(tp: Any) -> Any:
    """A pydantic TypeAdapter for `tp` if pydantic is installed and `tp` is a model; None otherwise."""
    try:
        import pydantic
    except ImportError:
        return None
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        return pydantic.TypeAdapter(tp)
    return None


def error_details(exc: Exception, tp: Any, name: Callable[[Any], str]) -> tuple[str, str, str, str] | None:
    """(what, path, expected, received) of a pydantic ValidationError's first error (types worded by `name`);
    None for other errors."""
    errors = getattr(exc, "errors", None)
    if not callable(errors) or type(exc).__module__.split(".")[0] != "pydantic_core":
        return None
    first = errors()[0]
    loc: tuple[Any, ...] = tuple(first.get("loc", ()))
    path = "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    declared = _declared_at(tp, loc)
    expected = name(declared) if declared is not None else str(first.get("msg", ""))
    received = type(first.get("input")).__name__
    return str(first.get("msg", exc)), path, expected, received


def _declared_at(tp: Any, loc: tuple[Any, ...]) -> Any:
    """The type declared at `loc` inside `tp` (model fields, containers), or None where the walk loses it."""
    for part in loc:
        fields = getattr(tp, "model_fields", None)
        args = typing.get_args(tp)
        origin = typing.get_origin(tp)
        if isinstance(fields, dict) and isinstance(part, str) and part in fields:
            tp = fields[part].annotation
        elif isinstance(part, int) and origin in (list, set, frozenset, tuple) and args:
            tp = args[part] if origin is tuple and args[-1] is not Ellipsis and part < len(args) else args[0]
        elif isinstance(part, str) and origin is dict and len(args) == 2:
            tp = args[1]
        else:
            return None
        while typing.get_origin(tp) is typing.Union or type(tp).__name__ == "UnionType":
            options = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(options) != 1:
                break
            tp = options[0]
    return tp


def half_schema_method(sending: Hook, receiving: Hook, kind: Hook) -> Callable[[type, Any, Any], Any]:
    """The half classes' `__get_pydantic_core_schema__` (`source`: the annotation, `Sender[Quote]`), running
    `sending`, `receiving` or (building a model in application code) `kind` on a half by the context."""

    def method(cls: type, source: Any, _handler: Any) -> Any:
        from pydantic_core import core_schema

        def validate(obj: Any, info: Any) -> Any:
            context = info.context
            hook = sending if context == SENDING else receiving if context == RECEIVING else kind
            try:
                return hook(source, obj)
            except TypeError as exc:  # (pydantic reports a ValueError with its path; a TypeError would escape)
                raise ValueError(str(exc)) from None

        def json_schema(_schema: Any, _handler: Any) -> dict[str, Any]:
            args = typing.get_args(source)
            out: dict[str, Any] = {"x-aqueduct-channel": cls.__name__}
            if args and args[0] is not Any and _describers:
                out["x-message"] = [_describers[0](args[0])]
            return out

        return core_schema.with_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(_itself),
            metadata={"pydantic_js_functions": [json_schema]},
        )

    return method


def _itself(obj: Any) -> Any:
    return obj


def json_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON Schema of a pydantic model (its definitions added to `defs` as `pydantic.Name`), or None if
    `tp` is not one (api/schema.py's hook for types msgspec cannot describe)."""
    adapter = model_adapter(tp)
    if adapter is None:
        return None
    schema: dict[str, Any] = adapter.json_schema(ref_template="#/$defs/pydantic.{model}")
    for name, definition in schema.pop("$defs", {}).items():
        defs[f"pydantic.{name}"] = definition
    return schema
