"""TransportSettings.congestion_control picks aioquic's congestion controller (Reno by default: decision
QUIC-17); CUBIC connects and carries messages; any other name is a ConfigError, not aioquic's bare
Exception at connect time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import aqueduct
from aqueduct.errors import AqueductError, ConfigError
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.settings import TransportSettings, client_configuration, server_configuration


@pytest.mark.parametrize("name", ["reno", "cubic"])
def test_both_ends_configure_the_chosen_controller(name: Any, certs: DevCerts) -> None:
    settings = TransportSettings(congestion_control=name)
    client = client_configuration(settings, server_name="localhost", ca=certs.ca)
    server = server_configuration(settings, cert=certs.cert, key=certs.key)
    assert client.congestion_control_algorithm == server.congestion_control_algorithm == name


def test_the_default_is_aioquics_reno() -> None:
    assert TransportSettings().congestion_control == "reno"


def test_an_unknown_controller_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="congestion_control must be one of reno, cubic, not 'bbr'") as info:
        TransportSettings(congestion_control="bbr")  # type: ignore[arg-type]
    assert isinstance(info.value, AqueductError)


async def test_a_cubic_connection_carries_a_request(certs: DevCerts) -> None:
    settings = TransportSettings(congestion_control="cubic")
    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key, settings=settings) as server:
        async def answer() -> None:
            async for conn in server:
                async for reply in conn.entrypoint:
                    await reply.send("pong")
                return

        task = asyncio.ensure_future(answer())
        conn = await aqueduct.connect(f"aqueduct://127.0.0.1:{server.address[1]}", ca=certs.ca, settings=settings)
        try:
            assert await aqueduct.request(conn.entrypoint, lambda reply: reply, timeout=10) == "pong"
        finally:
            await conn.close()
            task.cancel()
