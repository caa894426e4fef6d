"""`connect` fails with a `ConnectError` for everything that happens before the connection is usable (codec,
schema, protocol version, TLS, refusal): no channel existed yet, so it is no `ChannelError`, and
`except aqueduct.ConnectError` catches each. Its texts name both sides as the reader sees them."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import aqueduct
from aqueduct.api.schema import canonical, fingerprint
from aqueduct.core.startup import Startup
from aqueduct.quic.certs import DevCerts
from aqueduct.wire.errors import CloseCode, ProtocolError
from aqueduct.wire.frames import Version

from .conftest import guard, running


@dataclasses.dataclass
class Ask:
    sym: str


@dataclasses.dataclass
class AskMore:
    sym: str
    qty: int


async def _idle(conn: aqueduct.Connection[Any]) -> None:
    async for _ in conn.entrypoint:
        pass


def _refused_before_use(exc: BaseException) -> None:
    assert isinstance(exc, aqueduct.ConnectError), type(exc).__mro__
    assert not isinstance(exc, aqueduct.ChannelError)


async def test_a_codec_mismatch_is_a_connect_error(certs: DevCerts) -> None:
    async with running(certs, _idle) as (url, _):
        with pytest.raises(aqueduct.ConnectError) as info:
            await guard(aqueduct.connect(url, ca=certs.ca, codec=aqueduct.RawCodec()))
    _refused_before_use(info.value)
    assert isinstance(info.value, aqueduct.CodecMismatch) and info.value.code == CloseCode.CODEC_MISMATCH


async def test_a_schema_mismatch_is_a_connect_error_naming_the_server_and_this_client(certs: DevCerts) -> None:
    async with running(certs, _idle, entrypoint=Ask) as (url, _):
        with pytest.raises(aqueduct.ConnectError) as info:
            await guard(aqueduct.connect(url, ca=certs.ca, entrypoint=AskMore))
    _refused_before_use(info.value)
    assert isinstance(info.value, aqueduct.SchemaMismatch)
    server, client = fingerprint(canonical(Ask)), fingerprint(canonical(AskMore))
    assert f"the server's schema {server}, this client's {client}" in str(info.value), str(info.value)


@pytest.mark.pure_python
async def test_a_version_mismatch_is_a_connect_error(certs: DevCerts, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(frame: Version) -> None:  # (the server hears another version than its own)
        raise ProtocolError(f"peer speaks Aqueduct {frame.version!r}", CloseCode.VERSION_MISMATCH)

    monkeypatch.setattr(Startup, "check_version", staticmethod(refuse))
    async with running(certs, _idle) as (url, _):
        with pytest.raises(aqueduct.ConnectError) as info:
            await guard(aqueduct.connect(url, ca=certs.ca))
    _refused_before_use(info.value)
    assert info.value.code == CloseCode.VERSION_MISMATCH and "speaks Aqueduct" in str(info.value)


async def test_tls_and_refusal_are_connect_errors(certs: DevCerts, tmp_path: Any) -> None:
    from aqueduct.quic.certs import make_dev_certs

    other = make_dev_certs(tmp_path / "other")
    async with running(certs, _idle) as (url, _):
        with pytest.raises(aqueduct.ConnectError) as info:
            await guard(aqueduct.connect(url, ca=other.ca))  # the server's certificate is not from this CA
    _refused_before_use(info.value)

    async def refuse(headers: Any, identity: Any) -> None:
        raise aqueduct.AuthenticationFailed("no")

    async with running(certs, _idle, authenticate=refuse) as (url, _):
        with pytest.raises(aqueduct.ConnectError) as info:
            await guard(aqueduct.connect(url, ca=certs.ca))
    _refused_before_use(info.value)
