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

The peer's schema bytes are hostile input: their size is capped at the wire (EngineConfig
max_header_value_bytes), and before they are parsed `nesting_exceeds` scans them for JSON nesting deeper than
max_schema_depth (a linear scan, no recursion): a 200 KB `[[[...]]]` once raised RecursionError out of the
datagram callback. Past the cap, or not JSON, the peer is refused with SCHEMA_MISMATCH like any other
difference; the comparisons below then recurse at most max_schema_depth deep.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import hashlib
import json
import re
import types
import typing
from itertools import accumulate
from typing import Any, Literal

import msgspec

from ..errors import ConnectError
from .pydantic_models import describe_messages_with
from .pydantic_models import json_schema as pydantic_schema
from .validation import capabilities

SCHEMA_HEADER = "schema"
CANONICAL_KEPT = 256
"""Types whose canonical schema is kept (`canonical`; the least recently used go first)."""
SchemaCheck = Literal["exact", "compatible"]


class SchemaMismatch(ConnectError):
    """The server's entrypoint schema differs from the client's (`schema_check` decides what counts): `connect`
    fails with it (a ConnectError: no channel existed yet)."""


def describe(tp: Any) -> dict[str, Any]:
    """The JSON Schema of `tp`, channel halves described with their message types."""
    from .halves import OneshotReceiver, OneshotSender, Receiver, Sender

    halves = {Sender: "Sender", Receiver: "Receiver", OneshotSender: "OneshotSender",
              OneshotReceiver: "OneshotReceiver"}
    pydantic_defs: dict[str, Any] = {}
    caps = capabilities()

    def hook(cls: type) -> dict[str, Any]:
        if caps is not None and caps.declares(cls):
            return {"x-aqueduct-channel": "Sender"}  # (a service travels as its call sender; _fill says of what)
        if cls not in halves:
            model = pydantic_schema(cls, pydantic_defs)  # (a pydantic model describes itself, halves and all)
            if model is None:
                raise NotImplementedError
            return model
        return {"x-aqueduct-channel": halves[cls]}

    (root,), components = msgspec.json.schema_components([tp], schema_hook=hook, ref_template="#/$defs/{name}")
    # msgspec describes a half by its class alone; each field's annotation says what travels on it
    for name, hints in _field_hints(tp).items():
        props = components.get(name, {}).get("properties", {})
        for field, hint in hints.items():
            if field in props:
                _fill(props[field], hint, halves)
    _fill(root, tp, halves)
    schema = dict(root)
    if components or pydantic_defs:
        schema["$defs"] = {**components, **pydantic_defs}
    return _structural(schema)


describe_messages_with(describe)


def _fill(node: Any, hint: Any, halves: dict[type, str]) -> None:
    """Put into `node` (the schema msgspec made for an annotation `hint`) the message type of every half in it."""
    if not isinstance(node, dict):
        return
    origin = typing.get_origin(hint) or hint
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        _fill(node, args[0], halves)
        return
    caps = capabilities()
    if origin in halves or (caps is not None and caps.declares(origin)):
        inner = (args[0] if args else Any) if origin in halves else caps.message_type(origin)  # type: ignore[union-attr]
        if inner is not Any and "x-message" not in node:
            node["x-message"] = [describe(inner)]  # (a document of its own: _structural hoists its $defs)
        return
    if origin in (typing.Union, types.UnionType):
        options = node.get("anyOf", [node])
        for arg in args:
            arg_origin = typing.get_origin(arg) or arg
            name = halves.get(arg_origin) or ("Sender" if caps is not None and caps.declares(arg_origin) else None)
            if name is not None:
                spot = next((o for o in options if isinstance(o, dict) and o.get("x-aqueduct-channel") == name
                             and "x-message" not in o), None)
                if spot is not None:
                    _fill(spot, arg, halves)
        return
    if origin in (list, set, frozenset, collections.abc.Sequence, collections.abc.Set) and args:
        _fill(node.get("items"), args[0], halves)
    elif origin in (dict, collections.abc.Mapping) and len(args) == 2:
        _fill(node.get("additionalProperties"), args[1], halves)


def _field_hints(tp: Any) -> dict[str, dict[str, Any]]:
    """The field annotations of every struct, dataclass and TypedDict reachable from `tp`, by the name msgspec
    gives its definition (the field's name as encoded)."""
    out: dict[str, dict[str, Any]] = {}
    seen: set[int] = set()

    def visit(t: Any) -> None:
        if id(t) in seen:
            return
        seen.add(id(t))
        for arg in typing.get_args(t):
            visit(arg)
        hints: dict[str, Any] | None = None
        if isinstance(t, type) and issubclass(t, msgspec.Struct):
            hints = {f.encode_name: f.type for f in msgspec.structs.fields(t)}
        elif isinstance(t, type) and (dataclasses.is_dataclass(t) or typing.is_typeddict(t)):
            hints = typing.get_type_hints(t)
        if hints is not None:
            out.setdefault(t.__name__, hints)
            for hint in hints.values():
                visit(hint)

    visit(tp)
    return out


def _structural(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without type names: `$defs` renamed T0, T1, ... in the order a walk from the root meets
    them (a discriminator's mapping too), titles dropped. Two types of the same shape under other names
    describe the same messages. A nested document (a half's message type, with `$defs` of its own) has its
    definitions hoisted into the root's, so every `$ref` resolves against the root as JSON Schema wants."""
    renamed: dict[str, Any] = {}

    def document(doc: dict[str, Any]) -> Any:
        defs: dict[str, Any] = doc.get("$defs", {})
        names: dict[str, str] = {}

        def name_of(ref: str) -> str:
            old = ref.removeprefix("#/$defs/")
            if old not in names:
                names[old] = new = f"T{len(renamed)}"
                renamed[new] = None  # (reserved before the walk: a recursive type meets itself)
                renamed[new] = walk(defs.get(old, {}))
            return f"#/$defs/{names[old]}"

        def walk(node: Any) -> Any:
            if isinstance(node, dict):
                if node is not doc and "$defs" in node:
                    return document(node)
                out: dict[str, Any] = {}
                for key, value in node.items():
                    if key in ("title", "$defs"):
                        continue
                    if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
                        out[key] = name_of(value)
                    elif key == "discriminator" and isinstance(value, dict) and isinstance(value.get("mapping"), dict):
                        mapping = {tag: name_of(ref) if isinstance(ref, str) and ref.startswith("#/$defs/") else ref
                                   for tag, ref in value["mapping"].items()}
                        out[key] = {**value, "mapping": mapping}
                    else:
                        out[key] = walk(value)
                return out
            if isinstance(node, list):
                return [walk(v) for v in node]
            return node

        return walk(doc)

    out: dict[str, Any] = document(schema)
    if renamed:
        out["$defs"] = renamed
    return out


def canonical(tp: Any) -> bytes:
    """The schema of `tp` as the bytes announced in the `schema` header (worked out once per type: a few hundred
    microseconds for a small struct, which a client would otherwise pay on every connect; kept with the
    registered capabilities it was described under)."""
    try:
        hash(tp)
    except TypeError:  # (an unhashable hint: not kept)
        return _canonical(tp)
    return _canonical_kept(tp, typing.cast(collections.abc.Hashable, capabilities()))  # (an object: hashed by identity)


def _canonical(tp: Any, _under: object = None) -> bytes:
    return json.dumps(describe(tp), sort_keys=True, separators=(",", ":")).encode()


_canonical_kept = functools.lru_cache(maxsize=CANONICAL_KEPT)(_canonical)


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


DEFAULT_MAX_DEPTH = 64
"""Deepest JSON nesting accepted in a peer's schema (EngineConfig.max_schema_depth)."""
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def nesting_exceeds(doc: bytes, limit: int) -> bool:
    """Whether JSON text nests arrays and objects more than `limit` deep (strings skipped; one linear pass in C,
    no recursion: ~40 ms for 128 KiB of brackets). Text that is not JSON may pass: the parser then refuses it."""
    brackets = _JSON_STRING.sub(b"", doc).translate(None, _NOT_BRACKET)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


def check_peer(ours: bytes | None, theirs: bytes | None, mode: SchemaCheck,
               max_depth: int = DEFAULT_MAX_DEPTH, side: str = "client") -> str | None:
    """Why the peer's announced schema is refused by `side` ("client"/"server"), or None if it is accepted
    (`max_depth`: see nesting_exceeds). The reason names the server's schema and the client's, the same text
    whichever side refuses: the client may be the one that reads it (as the close reason)."""
    if ours is None or theirs is None or ours == theirs:
        return None
    peer = "this client" if side == "server" else "the server"
    if nesting_exceeds(theirs, max_depth):
        return (f"schema mismatch: {peer}'s schema header nests deeper than {max_depth} (max_schema_depth; "
                f"fingerprint {fingerprint(theirs)})")
    try:
        a, b = json.loads(ours), json.loads(theirs)
    except ValueError:
        return f"schema mismatch: {peer}'s schema header is not JSON (fingerprint {fingerprint(theirs)})"
    if mode == "compatible" and compatible(a, b):
        return None
    (server, s), (client, c) = ((ours, a), (theirs, b)) if side == "server" else ((theirs, b), (ours, a))
    where = first_difference(s, c) or "$"
    return (f"schema mismatch: the server's schema {fingerprint(server)}, this client's {fingerprint(client)}; "
            f"first difference at {where}")
