"""The public surface has one name per concept: every exported name resolves and is listed by `dir()`,
every exported error derives from AqueductError, and a `Connection` shows only its documented members
(no engine, aioquic adapter, futures or hooks: those are the library's `ConnectionLink`)."""

from __future__ import annotations

import asyncio
import inspect

import aqueduct
from aqueduct.api.connection import link_of
from aqueduct.api.link import ConnectionLink
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running

CONNECTION_MEMBERS = {
    "entrypoint", "peer_headers", "header", "peer_address", "codec", "stats", "rtt", "rtt_min", "is_closed",
    "close", "wait_closed", "peer_identity", "identity", "zero_rtt",
}
"""What README and the docstrings promise a service author; anything else is the library's business."""


def test_every_exported_name_resolves_and_is_listed() -> None:
    names = set(aqueduct.__all__)
    assert names <= set(dir(aqueduct))
    for name in names:
        assert getattr(aqueduct, name) is not None, name
    for concept in ("Sender", "Receiver", "Message", "Connection", "EndReason", "EngineConfig", "Stats"):
        assert concept in names


def test_every_exported_error_is_an_aqueduct_error() -> None:
    errors = [obj for obj in (getattr(aqueduct, n) for n in aqueduct.__all__)
              if inspect.isclass(obj) and issubclass(obj, BaseException)]
    assert len(errors) >= 10
    assert [e.__name__ for e in errors if not issubclass(e, aqueduct.AqueductError)] == []


def test_connection_shows_only_its_documented_members() -> None:
    public = {n for n in dir(aqueduct.Connection) if not n.startswith("_")}
    assert public == CONNECTION_MEMBERS
    for name in public:
        assert inspect.getdoc(getattr(aqueduct.Connection, name)), f"Connection.{name} has no docstring"


async def test_a_live_connection_hides_the_engine_and_the_adapter(certs: DevCerts) -> None:
    async def hold(conn: aqueduct.Connection) -> None:
        await conn.wait_closed()

    async with running(certs, hold) as (url, _server):
        async with aqueduct.connect(url, ca=certs.ca) as conn:
            for internal in ("engine", "protocol", "ready", "closed", "recording", "metrics", "send", "fill"):
                assert not hasattr(conn, internal), internal
            assert isinstance(link_of(conn), ConnectionLink)  # the library still reaches it
            assert conn.peer_address is not None and conn.peer_address[0] == "127.0.0.1"
            assert conn.codec.name.startswith("cbor") and conn.rtt > 0 and not conn.is_closed
            assert repr(conn).startswith("<aqueduct.Connection open")
        assert conn.is_closed
        assert (await guard(asyncio.shield(conn.wait_closed()))).error_code == 0
