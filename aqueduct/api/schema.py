"""Schemas agreed at connect: each side announces its entrypoint type's JSON Schema; a difference fails early.

Theory of operation. `describe(T)` is T's JSON Schema (msgspec) by shape, not by name (definitions
renamed T0, T1, ... in walk order, titles dropped), made canonical (sorted keys, no spaces):
a channel half inside it is `{"x-aqueduct-channel": "Sender" | "Receiver" | "OneshotSender" |
"OneshotReceiver", "x-message": <its message type's schema>}`. The canonical bytes travel in the
connection header `schema`; their SHA-256 is the fingerprint both sides compare. With
`schema_check="exact"` any difference closes the connection with SCHEMA_MISMATCH and raises
`aqueduct.SchemaMismatch` naming both fingerprints and the first differing path; with "compatible" a
peer whose schema differs only by optional fields (properties that neither side requires) is accepted.
A peer that announces no schema (or no headers at all) is served: validation still protects the edge.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from typing import Any, Literal

import msgspec

from ..errors import ConnectionLost
from .pydantic_models import describe_messages_with
from .pydantic_models import json_schema as pydantic_schema
from .validation import capabilities

SCHEMA_HEADER = "schema"
SchemaCheck = Literal["exact", "compatible"]


class SchemaMismatch(ConnectionLost):
    """The peer's entrypoint schema differs from ours (`schema_check` decides what counts)."""


def describe(tp: Any) -> dict[str, Any]:
    """The JSON Schema of `tp`, channel halves described with their message types."""
    from .halves import OneshotReceiver, OneshotSender, Receiver, Sender

    halves = {Sender: "Sender", Receiver: "Receiver", OneshotSender: "OneshotSender",
              OneshotReceiver: "OneshotReceiver"}
    inner: dict[type, list[Any]] = {}
    _collect_halves(tp, halves, inner, set())
    pydantic_defs: dict[str, Any] = {}

    def hook(cls: type) -> dict[str, Any]:
        caps = capabilities()
        if caps is not None and caps.declares(cls):
            return caps.describe(cls)  # (a service: the channel its calls travel on)
        if cls not in halves:
            model = pydantic_schema(cls, pydantic_defs)  # (a pydantic model describes itself, halves and all)
            if model is None:
                raise NotImplementedError
            return model
        out: dict[str, Any] = {"x-aqueduct-channel": halves[cls]}
        messages = sorted({json.dumps(describe(m), sort_keys=True) for m in inner.get(cls, []) if m is not Any})
        if messages:
            out["x-message"] = [json.loads(m) for m in messages]
        return out

    schema = msgspec.json.schema(tp, schema_hook=hook)
    if pydantic_defs:
        schema.setdefault("$defs", {}).update(pydantic_defs)
    return _structural(schema)


describe_messages_with(describe)


def _structural(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without type names: `$defs` renamed T0, T1, ... in the order a walk from the root meets
    them, titles dropped. Two types of the same shape under other names describe the same messages."""
    defs: dict[str, Any] = schema.get("$defs", {})
    names: dict[str, str] = {}

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                old = ref.removeprefix("#/$defs/")
                if old not in names:
                    names[old] = f"T{len(names)}"
                    renamed[names[old]] = walk(defs.get(old, {}))
                return {**{k: walk(v) for k, v in node.items() if k != "$ref"}, "$ref": f"#/$defs/{names[old]}"}
            return {k: walk(v) for k, v in node.items() if k not in ("title", "$defs")}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    renamed: dict[str, Any] = {}
    out: dict[str, Any] = walk(schema)
    if renamed:
        out["$defs"] = renamed
    return out


def _collect_halves(tp: Any, halves: dict[type, str], inner: dict[type, list[Any]], seen: set[int]) -> None:
    """Every `Half[X]` annotation reachable from `tp`, by half class (msgspec's schema loses the X)."""
    if id(tp) in seen:
        return
    seen.add(id(tp))
    origin = typing.get_origin(tp) or tp
    if origin in halves:
        args = typing.get_args(tp)
        inner.setdefault(origin, []).append(args[0] if args else Any)
        return
    for arg in typing.get_args(tp):
        _collect_halves(arg, halves, inner, seen)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        for f in msgspec.structs.fields(tp):
            _collect_halves(f.type, halves, inner, seen)
    elif dataclasses.is_dataclass(tp) or typing.is_typeddict(tp):
        for hint in typing.get_type_hints(tp).values():
            _collect_halves(hint, halves, inner, seen)


def canonical(tp: Any) -> bytes:
    """The schema of `tp` as the bytes announced in the `schema` header."""
    return json.dumps(describe(tp), sort_keys=True, separators=(",", ":")).encode()


def fingerprint(schema: bytes) -> str:
    """The fingerprint of announced schema bytes: SHA-256, first 16 bytes in hex."""
    return hashlib.sha256(schema).hexdigest()[:32]


def first_difference(ours: Any, theirs: Any, path: str = "$") -> str | None:
    """The first path (in sorted key order) where two schemas differ, or None if they are equal."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in sorted(set(ours) | set(theirs)):
            if key not in ours or key not in theirs:
                return f"{path}.{key}"
            found = first_difference(ours[key], theirs[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return path
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return None if ours == theirs else path


def compatible(ours: Any, theirs: Any) -> bool:
    """Equal but for properties that only one side has and that no side requires."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        props_a, props_b = ours.get("properties"), theirs.get("properties")
        if isinstance(props_a, dict) and isinstance(props_b, dict):
            required = set(ours.get("required", ())) | set(theirs.get("required", ()))
            if set(ours.get("required", ())) != set(theirs.get("required", ())):
                return False
            extra = set(props_a) ^ set(props_b)
            if extra & required:
                return False
            shared = set(props_a) & set(props_b)
            if not all(compatible(props_a[k], props_b[k]) for k in shared):
                return False
            rest_a = {k: v for k, v in ours.items() if k not in ("properties", "required")}
            rest_b = {k: v for k, v in theirs.items() if k not in ("properties", "required")}
            return compatible(rest_a, rest_b)
        if set(ours) != set(theirs):
            return False
        return all(compatible(ours[k], theirs[k]) for k in ours)
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(compatible(a, b) for a, b in zip(ours, theirs, strict=True))
    return bool(ours == theirs)


def check_peer(ours: bytes | None, theirs: bytes | None, mode: SchemaCheck) -> str | None:
    """Why the peer's announced schema is refused, or None if it is accepted."""
    if ours is None or theirs is None or ours == theirs:
        return None
    try:
        a, b = json.loads(ours), json.loads(theirs)
    except ValueError:
        return f"schema mismatch: the peer's schema header is not JSON (fingerprint {fingerprint(theirs)})"
    if mode == "compatible" and compatible(a, b):
        return None
    where = first_difference(a, b) or "$"
    return (f"schema mismatch: ours {fingerprint(ours)}, the peer's {fingerprint(theirs)}; "
            f"first difference at {where}")
