"""First contact fails fast and says why: bad files before any network step, nothing listening at once,
no answer within `connect_timeout`, and a TLS verification failure once, naming the name and the CA.

Each case is asserted by what the error says and that it is an `aqueduct.ConnectError` (or
`aqueduct.ConfigError` for local files); none depends on wall time except through the guard."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import aqueduct
from aqueduct.quic.certs import DevCerts, make_dev_certs

from .conftest import guard, running


async def _nothing(conn: aqueduct.Connection) -> None:
    await conn.wait_closed()


def test_connect_and_config_errors_are_aqueduct_errors() -> None:
    assert issubclass(aqueduct.ConnectError, aqueduct.AqueductError)
    assert not issubclass(aqueduct.ConnectError, aqueduct.ChannelError)  # no channel existed yet
    assert issubclass(aqueduct.ConfigError, aqueduct.AqueductError)


@pytest.mark.parametrize("url", ["http://127.0.0.1:4433", "aqueduct://", "aqueduct://127.0.0.1:99999",
                                 "aqueduct://127.0.0.1:port"])
async def test_a_bad_url_is_a_config_error_naming_it(url: str) -> None:
    with pytest.raises(aqueduct.ConfigError, match="not an aqueduct://host:port URL") as info:
        await guard(aqueduct.connect(url))
    assert url in str(info.value)


async def test_missing_ca_file_is_reported_before_any_network_step(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "ca.pem"
    # port 9 on loopback: if anything were sent, the error would be a ConnectError, not this one
    with pytest.raises(aqueduct.ConfigError, match=rf"CA file {missing}: no such file"):
        await guard(aqueduct.connect("aqueduct://127.0.0.1:9", ca=missing))


async def test_a_ca_file_that_holds_no_certificate_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    with pytest.raises(aqueduct.ConfigError, match=rf"CA file {bad}: no PEM certificate"):
        await guard(aqueduct.connect("aqueduct://127.0.0.1:9", ca=bad))


async def test_missing_or_bad_server_cert_and_key_are_named(certs: DevCerts, tmp_path: Path) -> None:
    with pytest.raises(aqueduct.ConfigError, match=rf"certificate file {tmp_path / 'cert.pem'}: no such file"):
        await guard(aqueduct.serve("127.0.0.1", 0, cert=tmp_path / "cert.pem", key=certs.key).__aenter__())
    (tmp_path / "key.pem").write_text("garbage")
    with pytest.raises(aqueduct.ConfigError, match=rf"key file {tmp_path / 'key.pem'}: "):
        await guard(aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=tmp_path / "key.pem").__aenter__())


def _unused_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_ip_address_is_connected_to_without_a_lookup(certs: DevCerts, monkeypatch: pytest.MonkeyPatch) -> None:
    """asyncio's getaddrinfo runs in a thread: an address needs none (a name still does)."""
    loop = asyncio.get_running_loop()
    looked_up: list[str] = []
    lookup = loop.getaddrinfo

    async def counting(host: str, *args: object, **kwargs: object) -> object:
        looked_up.append(host)
        return await lookup(host, *args, **kwargs)  # type: ignore[arg-type]

    async with running(certs, _nothing) as (url, server):
        monkeypatch.setattr(loop, "getaddrinfo", counting)  # (the server looked its address up before)
        port = server.address[1]
        async with aqueduct.connect(url, ca=certs.ca) as conn:
            assert conn.rtt >= 0
        async with aqueduct.connect(f"aqueduct://localhost:{port}", ca=certs.ca, server_name="127.0.0.1"):
            pass
    assert looked_up == ["localhost"]


async def test_nothing_listening_fails_at_once_on_port_unreachable(certs: DevCerts) -> None:
    port = _unused_udp_port()
    # connect_timeout far beyond the guard: only the ICMP port-unreachable can end this in time
    with pytest.raises(aqueduct.ConnectError, match=rf"nothing is listening at 127\.0\.0\.1:{port}"):
        await guard(aqueduct.connect(f"aqueduct://127.0.0.1:{port}", ca=certs.ca, connect_timeout=600.0))


async def test_a_silent_address_fails_after_connect_timeout(certs: DevCerts) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:  # bound, never answers
        silent.bind(("127.0.0.1", 0))
        port = silent.getsockname()[1]
        with pytest.raises(aqueduct.ConnectError, match=rf"no answer from 127\.0\.0\.1:{port} within 0\.3 s"):
            await guard(aqueduct.connect(f"aqueduct://127.0.0.1:{port}", ca=certs.ca, connect_timeout=0.3))


async def test_wrong_ca_says_which_name_and_ca_failed(certs: DevCerts, tmp_path: Path) -> None:
    other = make_dev_certs(tmp_path / "other")
    async with running(certs, _nothing) as (url, _):
        with pytest.raises(aqueduct.ConnectError) as info:
            await guard(aqueduct.connect(url, ca=other.ca))
        text = str(info.value)
        assert "TLS verification of 127.0.0.1 failed" in text and str(other.ca) in text
        assert "unable to get local issuer certificate" in text
        with pytest.raises(aqueduct.ConnectError, match=r"TLS verification of wrong\.example failed"):
            await guard(aqueduct.connect(url, ca=certs.ca, server_name="wrong.example"))


# Run as an application would, with no logging configured (pytest's own log capture would hide what
# Python's last-resort handler prints): each failure is the one line the script prints, nothing on stderr.
FAILURES_ALONE = """
import asyncio, socket, sys
import aqueduct

async def attempt(**kw):
    try:
        async with aqueduct.connect(**kw):
            pass
    except aqueduct.AqueductError as exc:
        print(type(exc).__name__, exc)

async def main(port, ca, other_ca):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    await attempt(url=f"aqueduct://127.0.0.1:{free}", ca=ca, connect_timeout=600.0)
    await attempt(url=f"aqueduct://127.0.0.1:{port}", ca=other_ca)
    await asyncio.sleep(0.5)  # not a synchronisation: room for any late callback to print before exit

asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
"""


async def test_failures_print_nothing_beside_the_error(certs: DevCerts, tmp_path: Path) -> None:
    other = make_dev_certs(tmp_path / "other")
    async with running(certs, _nothing) as (_, server):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", FAILURES_ALONE, str(server.address[1]), str(certs.ca), str(other.ca),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await guard(proc.communicate())
    lines = out.decode().splitlines()
    assert [line.split()[0] for line in lines] == ["ConnectError", "ConnectError"], lines
    assert "nothing is listening" in lines[0] and "TLS verification of 127.0.0.1 failed" in lines[1]
    assert err.decode() == ""


CLI = [sys.executable, "-m", "aqueduct"]


@pytest.mark.parametrize("argv", [
    ["serve", "--echo", "--port", "0", "--cert", "{d}/missing-cert.pem", "--key", "{d}/key.pem"],
    ["replay", "{d}", "--to", "aqueduct://127.0.0.1:9", "--ca", "{d}/missing-ca.pem"],
])
def test_cli_names_the_missing_file_in_one_line(tmp_path: Path, argv: list[str]) -> None:
    (tmp_path / "key.pem").write_text("")
    args = [a.format(d=tmp_path) for a in argv]
    out = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out
    line = out.stderr.strip()
    assert "\n" not in line and "Traceback" not in line and "missing-" in line and "no such file" in line
