"""The public surface has one name per concept, written once: `aqueduct.__all__` is its parts' lists joined
(errors, api, services: no name written in aqueduct/__init__.py), no two names for one thing, every exported
name resolves and is listed by `dir()`, every exported error derives from AqueductError, the guides and
examples reach only public modules, and `Sender`, `Receiver`, `Server` and `Connection` show exactly what an
application calls: no wiring (binding, moving, typing a half: halves/wiring.py), and no public path from a
half or a connection to the link, the engine or the aioquic adapter (the library asks `link_of`)."""

from __future__ import annotations

import asyncio
import inspect
import re
import subprocess
import sys
from pathlib import Path

import aqueduct
from aqueduct import api, errors, services
from aqueduct.api.connection import link_of
from aqueduct.api.link import ConnectionLink
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running

CONNECTION_MEMBERS = {
    "entrypoint", "peer_headers", "header", "peer_address", "codec", "stats", "rtt", "rtt_min", "is_closed",
    "close", "wait_closed", "peer_identity", "identity", "zero_rtt", "transport",
}
"""What README and the docstrings promise a service author; anything else is the library's business."""
SURFACE = {
    "Sender": {"send", "try_send", "finish", "cancel", "clone", "ended", "mode", "message_type", "networked"},
    "Receiver": {"recv", "recv_message", "close", "on_invalid", "message_type", "networked"},
    "Server": {"accept", "stop_accepting", "drain", "address", "connections", "admission", "metrics",
               "metrics_address", "worker_dir", "webtransport"},
    "Connection": CONNECTION_MEMBERS,
}
"""The exact public names of the four classes an application holds, instances' attributes included."""


def test_every_exported_name_resolves_and_is_listed() -> None:
    names = set(aqueduct.__all__)
    assert names <= set(dir(aqueduct))
    for name in names:
        assert getattr(aqueduct, name) is not None, name
    for concept in ("Sender", "Receiver", "Message", "Connection", "EndReason", "EngineConfig", "Stats"):
        assert concept in names


ROOT = Path(__file__).resolve().parents[2]
PUBLIC_MODULES = {
    "aqueduct", "aqueduct.errors", "aqueduct.testing", "aqueduct.recording", "aqueduct.metrics",
    "aqueduct.metrics_otel", "aqueduct.spark", "aqueduct.services.otel", "aqueduct.quic.certs",
    "aqueduct.quic.webtransport_cert",
}
"""Where a user may reach besides `aqueduct` itself (decision API-27): the tools'
packages, the ENDINGS table's module and the dev certificates; every other module is the library's own."""
NOT_MODULES = {"aqueduct.quic", "aqueduct.bench"}
"""Names the guides mention that are no module to import: a logger's, an entry point group's."""


def test_all_is_the_parts_lists_joined_and_written_once() -> None:
    joined = [*errors.__all__, *api.__all__, *services.__all__]
    assert aqueduct.__all__ == joined
    assert len(set(joined)) == len(joined), "a name exported by two parts"
    source = (ROOT / "aqueduct" / "__init__.py").read_text()
    written = [name for name in joined if re.search(rf"[\"']{name}[\"']", source)]
    assert written == [], f"aqueduct/__init__.py writes public names itself: {written}"


def test_one_name_per_concept() -> None:
    lowered = [name.lower() for name in aqueduct.__all__]
    assert sorted(n for n in aqueduct.__all__ if lowered.count(n.lower()) > 1) == []  # broadcast/Broadcast
    assert not hasattr(aqueduct, "broadcast") and not hasattr(aqueduct, "watch")
    assert aqueduct.connect is services.connect and aqueduct.serve is services.serve  # the ones with service=
    assert not issubclass(aqueduct.ConnectError, aqueduct.ChannelError)


def test_importing_aqueduct_loads_no_asyncio_until_the_api_is_used() -> None:
    probe = ("import sys, aqueduct; assert 'asyncio' not in sys.modules, 'eager';"
             "aqueduct.AqueductError; assert 'asyncio' not in sys.modules, 'errors';"
             "aqueduct.Sender; assert 'asyncio' in sys.modules; from aqueduct import *; Broadcast; ChannelFinished")
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=ROOT)


def test_guides_and_examples_reach_only_public_modules() -> None:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*.py"))]
    reached = {}
    for path in texts:
        for dotted in set(re.findall(r"\baqueduct(?:\.[a-z_][a-z_0-9]*)+", path.read_text())) - NOT_MODULES:
            parts = dotted.split(".")
            module = next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in
                           PUBLIC_MODULES or _is_module(".".join(parts[:n]))), dotted)
            reached.setdefault(module, path.name)
    private = {m: where for m, where in reached.items() if not any(m == p or m.startswith(p + ".") for p in
                                                                   PUBLIC_MODULES - {"aqueduct"}) and m != "aqueduct"}
    assert private == {}, f"guides or examples reach into the library's own modules: {private}"


def _is_module(dotted: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(dotted) is not None
    except (ImportError, ValueError):
        return False


def test_every_exported_error_is_an_aqueduct_error() -> None:
    errors = [obj for obj in (getattr(aqueduct, n) for n in aqueduct.__all__)
              if inspect.isclass(obj) and issubclass(obj, BaseException)]
    assert len(errors) >= 10
    assert [e.__name__ for e in errors if not issubclass(e, aqueduct.AqueductError)] == []


async def test_the_halves_server_and_connection_show_exactly_their_public_names(certs: DevCerts) -> None:
    tx, rx = aqueduct.channel()

    async def hold(conn: aqueduct.Connection) -> None:
        await conn.wait_closed()

    async with running(certs, hold) as (url, server), aqueduct.connect(url, ca=certs.ca) as conn:
        held = {"Sender": tx, "Receiver": rx, "Server": server, "Connection": conn}
        shown = {name: {n for n in dir(obj) if not n.startswith("_")} for name, obj in held.items()}
        assert shown == SURFACE
        assert len(SURFACE["Sender"]) <= 10 and len(SURFACE["Receiver"]) <= 10
        for half in (tx, rx, conn.entrypoint):
            for internal in ("link", "port", "binding", "engine", "spec", "bind", "adopt", "join", "hand_on"):
                assert not hasattr(half, internal), internal
        assert link_of(conn.entrypoint) is link_of(conn) and link_of(tx) is None  # the library's door


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
