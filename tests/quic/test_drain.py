"""Draining the UDP socket: a burst of datagrams is handled in one readiness callback (one loop turn)."""

from __future__ import annotations

import asyncio
import socket

from aqueduct.api.connection import link_of
from aqueduct.quic.certs import DevCerts
from aqueduct.quic.drain import drain, drainable_socket
from aqueduct.quic.endpoint import open_server
from aqueduct.quic.limits import LimitedQuicServer


def _udp_pair() -> tuple[socket.socket, socket.socket]:
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.setblocking(False)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    return rx, tx


def test_drain_reads_what_is_waiting_up_to_the_limit_then_stops() -> None:
    rx, tx = _udp_pair()
    for i in range(5):
        tx.sendto(bytes([i]), rx.getsockname())
    got: list[bytes] = []
    drain(rx, lambda data, addr: got.append(data), lambda exc: got.append(b"error"), limit=3)
    assert got == [b"\x00", b"\x01", b"\x02"]
    drain(rx, lambda data, addr: got.append(data), lambda exc: got.append(b"error"))
    assert got == [b"\x00", b"\x01", b"\x02", b"\x03", b"\x04"]  # then the empty socket ends it, no error
    rx.close()
    tx.close()


def test_drain_reports_a_socket_error_and_stops() -> None:
    rx, tx = _udp_pair()
    rx.close()
    errors: list[Exception] = []
    drain(rx, lambda data, addr: None, errors.append)
    assert len(errors) == 1 and isinstance(errors[0], OSError)
    tx.close()


async def test_the_server_handles_a_burst_in_one_callback(certs: DevCerts) -> None:
    transport, server = await open_server("127.0.0.1", 0, cert=certs.cert, key=certs.key, on_connection=lambda p: None)
    assert isinstance(server, LimitedQuicServer)
    assert drainable_socket(transport) is not None
    calls, seen = [], []
    done = asyncio.get_running_loop().create_future()
    outer, inner = server.datagram_received, server._one_datagram

    def counting_outer(data: bytes | str, addr: object) -> None:
        calls.append(data)
        outer(data, addr)

    def counting_inner(data: bytes | str, addr: object) -> None:
        seen.append(data)
        inner(data, addr)
        if len(seen) == 4 and not done.done():
            done.set_result(None)

    server.datagram_received = counting_outer  # type: ignore[method-assign]
    server._one_datagram = counting_inner  # type: ignore[method-assign]
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(4):  # short junk: aioquic ignores it; all four are queued before the loop looks
        tx.sendto(bytes([i]) * 8, transport.get_extra_info("sockname"))
    await done
    assert seen == [bytes([i]) * 8 for i in range(4)]
    assert len(calls) == 1  # one readiness callback handled the whole burst
    tx.close()
    transport.close()


async def test_a_client_drains_its_own_socket_and_a_server_connection_never_drains_the_shared_one(
    certs: DevCerts,
) -> None:
    import aqueduct

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key) as server:
        conn = await aqueduct.connect(f"aqueduct://127.0.0.1:{server.address[1]}", ca=certs.ca)
        accepted = await anext(aiter(server))
        assert link_of(conn).protocol._drain_sock is not None
        assert link_of(accepted).protocol._drain_sock is None
        await conn.close()


def test_a_server_burst_hands_each_connection_its_events_once_after_the_last_datagram() -> None:
    """Burst (quic/burst.py): while open, connections given datagrams only join; on close each joined
    connection handles its events once, in the order they first joined, and the burst is empty again."""
    from aqueduct.quic.burst import Burst

    ended: list[str] = []

    class Conn:
        def __init__(self, name: str) -> None:
            self.name = name

        def end_burst(self) -> None:
            ended.append(self.name)

    burst = Burst()
    a, b = Conn("a"), Conn("b")
    burst.open = True
    for conn in (a, b, a, a, b):
        burst.joined[conn] = None  # type: ignore[index]
    assert ended == []
    burst.close()
    assert ended == ["a", "b"] and not burst.open and not burst.joined
    burst.close()
    assert ended == ["a", "b"]
