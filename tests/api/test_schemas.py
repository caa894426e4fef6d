"""Schemas agreed at connect: the entrypoint types' fingerprints are compared in the connection headers."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import typing
from typing import Any

import msgspec
import pytest

import aqueduct
from aqueduct import CloseCode, OneshotSender, RawCodec, RawMessage, Receiver
from aqueduct.api.link import ConnectionLink
from aqueduct.api.schema import canonical, check_peer, describe, fingerprint, first_difference
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.endpoint import open_client

from .conftest import guard, running


class Quote(msgspec.Struct):
    sym: str
    px: float


class OrderV1(msgspec.Struct):
    sym: str
    qty: int
    reply: OneshotSender[Quote]


class OrderV2(msgspec.Struct):  # qty became a float: a real difference
    sym: str
    qty: float
    reply: OneshotSender[Quote]


class OrderV1Plus(msgspec.Struct):  # one optional field more: compatible
    sym: str
    qty: int
    reply: OneshotSender[Quote]
    note: str | None = None


@dataclasses.dataclass
class OtherQuote:
    sym: str
    px: str


class OrderOtherReply(msgspec.Struct):  # the attached channel's message type differs
    sym: str
    qty: int
    reply: OneshotSender[OtherQuote]


def test_schema_names_the_channel_and_its_message_type() -> None:
    schema = describe(OrderV1)
    reply = schema["$defs"]["T0"]["properties"]["reply"]
    assert reply["x-aqueduct-channel"] == "OneshotSender"
    assert reply["x-message"] == [{"$ref": "#/$defs/T1"}]  # (the message type's definition hoisted to the root)
    assert schema["$defs"]["T1"]["properties"]["px"] == {"type": "number"}
    assert fingerprint(canonical(OrderV1)) == fingerprint(canonical(OrderV1))
    assert len({fingerprint(canonical(t)) for t in (OrderV1, OrderV2, OrderV1Plus, OrderOtherReply)}) == 4


def test_exact_and_compatible_checks() -> None:
    v1, v2, plus, other = (canonical(t) for t in (OrderV1, OrderV2, OrderV1Plus, OrderOtherReply))
    assert check_peer(v1, v1, "exact") is None and check_peer(v1, None, "exact") is None
    why = check_peer(v1, v2, "exact")
    assert why is not None and fingerprint(v1) in why and fingerprint(v2) in why
    assert why.endswith("first difference at $.$defs.T0.properties.qty.type")
    assert check_peer(v1, plus, "exact") is not None
    assert check_peer(v1, plus, "compatible") is None and check_peer(plus, v1, "compatible") is None
    assert check_peer(v1, v2, "compatible") is not None
    assert check_peer(v1, other, "compatible") is not None
    assert first_difference(json.loads(v1), json.loads(other)) == "$.$defs.T1.properties.px.type"  # (the reply's)


class Renamed(msgspec.Struct):  # OrderV1's shape under another name: the same schema
    sym: str
    qty: int
    reply: OneshotSender[Quote]


def test_the_schema_is_the_shape_not_the_names() -> None:
    assert canonical(Renamed) == canonical(OrderV1)
    with_required_note = json.loads(canonical(OrderV1Plus))
    with_required_note["$defs"]["T0"]["required"].append("note")
    assert check_peer(canonical(OrderV1), json.dumps(with_required_note).encode(), "compatible") is not None


async def _desk(conn: aqueduct.Connection[Receiver[Any]]) -> None:
    async for _ in conn.entrypoint:
        pass


async def test_different_entrypoint_schemas_fail_at_connect(certs: DevCerts) -> None:
    async with running(certs, _desk, entrypoint=OrderV1) as (url, _):
        with pytest.raises(aqueduct.SchemaMismatch) as info:
            await guard(aqueduct.connect(url, ca=certs.ca, entrypoint=OrderV2))
        text = str(info.value)
        assert fingerprint(canonical(OrderV1)) in text and fingerprint(canonical(OrderV2)) in text
        assert "first difference at $." in text and info.value.code == CloseCode.SCHEMA_MISMATCH
        async with aqueduct.connect(url, ca=certs.ca, entrypoint=OrderV1) as same:  # the same type: served
            await same.entrypoint.send(OrderV1("X", 1, aqueduct.oneshot(Quote)[0]))
        async with aqueduct.connect(url, ca=certs.ca) as untyped:  # no schema announced: served, validated
            await untyped.entrypoint.send({"sym": "X", "qty": 1, "reply": aqueduct.oneshot()[0]})


async def test_compatible_mode_over_a_connection(certs: DevCerts) -> None:
    async with running(certs, _desk, entrypoint=OrderV1, schema_check="compatible") as (url, _):
        with pytest.raises(aqueduct.SchemaMismatch):  # the client's own exact check refuses the difference
            await guard(aqueduct.connect(url, ca=certs.ca, entrypoint=OrderV1Plus))
        async with aqueduct.connect(url, ca=certs.ca, entrypoint=OrderV1Plus, schema_check="compatible") as c:
            await c.entrypoint.send(OrderV1Plus("X", 1, aqueduct.oneshot(Quote)[0], note="optional"))
        with pytest.raises(aqueduct.SchemaMismatch):  # compatible is not anything goes
            await guard(aqueduct.connect(url, ca=certs.ca, entrypoint=OrderV2, schema_check="compatible"))


async def test_a_peer_announcing_no_codec_is_served(certs: DevCerts) -> None:
    """The spec makes headers optional: a plain peer without a `codec` header gets the server's codec."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aqueduct", "serve", "--echo", "--port", "0", "--cert", str(certs.cert),
        "--key", str(certs.key), stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        host, _, port = (await guard(proc.stdout.readline())).decode().strip().removeprefix("listening on ") \
            .rpartition(":")
        protocol = await open_client(host, int(port), headers=(), ca=certs.ca)  # no headers at all
        conn = ConnectionLink(protocol, RawCodec())
        await guard(conn.ready)
        reply_tx, reply_rx = aqueduct.channel()
        await conn.entrypoint.send(RawMessage(b"plain", [reply_tx]))
        assert (await guard(reply_rx.recv())).data == b"plain"
        await conn.close()
    finally:
        proc.terminate()
        await proc.wait()


def test_cli_prints_schema_and_fingerprint() -> None:
    out = subprocess.run([sys.executable, "-m", "aqueduct", "schema", "tests.api.test_schemas:OrderV1"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    *schema_lines, last = out.stdout.strip().splitlines()
    printed = json.loads("\n".join(schema_lines))
    assert printed.pop("$schema") == "https://json-schema.org/draft/2020-12/schema"
    assert printed == describe(OrderV1)
    assert last == f"fingerprint: {fingerprint(canonical(OrderV1))}"
    bad = subprocess.run([sys.executable, "-m", "aqueduct", "schema", "no_such_module:X"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "cannot load" in bad.stderr and "\n" not in bad.stderr.strip()


def test_a_types_schema_is_worked_out_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client announces its entrypoint's schema on every connect: the type is described once, and an
    unhashable hint is described each time (not kept)."""
    from aqueduct.api import schema

    described: list[Any] = []
    describe = schema.describe

    def counting(tp: Any) -> dict[str, Any]:
        described.append(tp)
        return describe(tp)

    monkeypatch.setattr(schema, "describe", counting)

    class Once(msgspec.Struct):
        name: str
        reply: aqueduct.Sender[int]

    first = schema.canonical(Once)
    assert described[0] is Once  # (then the message types inside it)
    seen = len(described)
    assert schema.canonical(Once) is first
    assert len(described) == seen
    unhashable: Any = typing.Annotated[int, []]  # (metadata msgspec ignores)
    assert schema.canonical(unhashable) == schema.canonical(unhashable)
    assert described[seen:] == [unhashable, unhashable]
