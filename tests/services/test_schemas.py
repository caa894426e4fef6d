"""Schemas: a service's schema (methods, arguments, results) is agreed at connect like an entrypoint's, and
`aqueduct schema` prints it; the printed schemas are JSON Schema 2020-12 whose references all resolve. The
defects a new user found are each checked: import from the current directory, a tagged union's
discriminator naming the renamed definitions, each reply field carrying only its own reply type, and a
`Sender[Update]` field keeping Update's schema."""

from __future__ import annotations

import abc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import aqueduct
from aqueduct.api.schema import canonical, describe, fingerprint
from aqueduct.quic.certs import DevCerts
from aqueduct.services.interface import interface_of
from tests.api.conftest import guard

from .calc import Calc
from .conftest import served

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "import sys; from aqueduct.cli import main; sys.exit(main())"]

KVTYPES = '''
from __future__ import annotations
import msgspec
from aqueduct import OneshotSender, Sender

class Update(msgspec.Struct):
    key: str
    value: int

class Put(msgspec.Struct, tag=True):
    key: str
    value: int
    reply: OneshotSender[bool]

class Get(msgspec.Struct, tag=True):
    key: str
    reply: OneshotSender[int | None]

class Watch(msgspec.Struct, tag=True):
    prefix: str
    updates: Sender[Update]

Request = Put | Get | Watch
'''


def schema_command(where: Path, target: str) -> tuple[dict[str, Any], str]:
    """Run `aqueduct schema target` in `where` (the package on PYTHONPATH, `where` not): (schema, fingerprint)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([*CLI, "schema", target], capture_output=True, text=True, timeout=60, env=env, cwd=where)
    assert result.returncode == 0, result.stderr
    text, _, last = result.stdout.rstrip().rpartition("\n")
    assert last.startswith("fingerprint: ")
    return json.loads(text), last.removeprefix("fingerprint: ")


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow `node`'s $ref within `schema` (as a JSON Schema validator resolves it against the root)."""
    while "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/$defs/"), ref
        node = schema["$defs"][ref.removeprefix("#/$defs/")]
    return node


def test_the_schema_command_imports_from_the_current_directory_and_its_defects_are_gone(tmp_path: Path) -> None:
    (tmp_path / "kvtypes.py").write_text(KVTYPES)
    schema, _ = schema_command(tmp_path, "kvtypes:Request")
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    members = {resolve(schema, m)["properties"]["type"]["enum"][0]: m for m in schema["anyOf"]}
    for tag, ref in schema["discriminator"]["mapping"].items():  # the mapping points at the renamed definitions
        assert {"$ref": ref} == members[tag]
    put = resolve(schema, members["Put"])["properties"]["reply"]
    get = resolve(schema, members["Get"])["properties"]["reply"]
    assert put["x-message"] == [{"type": "boolean"}]  # each reply field carries its own reply type only
    assert get["x-message"] == [{"anyOf": [{"type": "integer"}, {"type": "null"}]}]
    update = resolve(schema, resolve(schema, members["Watch"])["properties"]["updates"]["x-message"][0])
    assert update["properties"] == {"key": {"type": "string"}, "value": {"type": "integer"}}  # not an empty {}
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate({"type": "Put", "key": "k", "value": 1, "reply": 0})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"type": "Put", "key": "k", "value": "one", "reply": 0})


def test_the_schema_command_prints_a_service_and_its_fingerprint_is_the_one_announced(tmp_path: Path) -> None:
    (tmp_path / "calcmod.py").write_text(textwrap.dedent('''
        import abc
        import aqueduct

        class Listener(aqueduct.Service):
            @abc.abstractmethod
            async def notify(self, text: str) -> None: ...

        class Calculator(aqueduct.Service):
            @abc.abstractmethod
            async def add(self, a: int, b: int) -> int: ...

            @abc.abstractmethod
            async def count(self, upto: int) -> aqueduct.Receiver[int]: ...

            @abc.abstractmethod
            async def subscribe(self, listener: Listener) -> None: ...
    '''))
    schema, printed = schema_command(tmp_path, "calcmod:Calculator")
    jsonschema.Draft202012Validator.check_schema(schema)
    calls = {resolve(schema, m)["properties"]["method"]["enum"][0]: resolve(schema, m) for m in schema["anyOf"]}
    assert set(calls) == {"add", "count", "subscribe"}
    assert calls["add"]["properties"]["a"] == {"type": "integer"}
    add_reply = resolve(schema, calls["add"]["properties"]["reply"]["x-message"][0])
    assert add_reply["properties"]["value"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    counted = resolve(schema, calls["count"]["properties"]["reply"]["x-message"][0])["properties"]["value"]
    assert any(o.get("x-message") == [{"type": "integer"}] for o in counted["anyOf"])  # a Receiver[int]
    listener = calls["subscribe"]["properties"]["listener"]
    assert listener["x-aqueduct-channel"] == "Sender"  # a capability: the Sender of the listener's calls
    notify = resolve(schema, resolve(schema, listener["x-message"][0]))
    assert notify["properties"]["method"]["enum"] == ["notify"]
    assert printed == fingerprint(canonical(interface_of(SameShape).call_type))  # by shape, not by names
    assert describe(interface_of(SameShape).call_type) == {k: v for k, v in schema.items() if k != "$schema"}


class Heard(aqueduct.Service):
    @abc.abstractmethod
    async def notify(self, text: str) -> None: ...


class SameShape(aqueduct.Service):  # calcmod.Calculator under other names
    @abc.abstractmethod
    async def add(self, a: int, b: int) -> int: ...

    @abc.abstractmethod
    async def count(self, upto: int) -> aqueduct.Receiver[int]: ...

    @abc.abstractmethod
    async def subscribe(self, listener: Heard) -> None: ...


class Calculator2(aqueduct.Service):  # Calculator's name, another shape
    @abc.abstractmethod
    async def add(self, a: str, b: str) -> str: ...


async def test_the_service_schema_is_agreed_at_connect(certs: DevCerts) -> None:
    async with served(certs) as (_, conn, server):
        assert await guard(conn.service.add(1, 1)) == 2
        host, port = server.address
        with pytest.raises(aqueduct.SchemaMismatch):
            await guard(aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca, service=Calculator2))
        async with aqueduct.connect(f"aqueduct://{host}:{port}", ca=certs.ca, service=Calc) as same:
            assert await guard(same.service.add(2, 2)) == 4  # an implementation's interface is the same
