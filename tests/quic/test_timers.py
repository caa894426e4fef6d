"""aioquic's loop timer is re-armed lazily (quic/aioquic_protocol.py `send_packets`): its deadline moves on nearly
every packet, mostly later, and a timer already armed no later than the new deadline is kept."""

from __future__ import annotations

import asyncio
from typing import Any

import aqueduct
from aqueduct.quic.certs import DevCerts


async def test_request_reply_arms_few_loop_timers(certs: DevCerts) -> None:
    """200 fresh-oneshot requests, both ends in this loop: aioquic cancelled and made a loop timer at every
    transmit (~2 per call); kept when the deadline moved later, it is armed far less than once per call, and
    the exchange (ACK and loss timers included) runs on."""
    loop = asyncio.get_running_loop()
    armed = 0
    call_at = loop.call_at

    def counting(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        nonlocal armed
        armed += getattr(callback, "__name__", "") == "_handle_timer"
        return call_at(when, callback, *args, **kwargs)

    async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key) as server:
        async def answer() -> None:
            async for conn in server:
                async for req in conn.entrypoint:
                    await req["reply"].send(req["n"])

        task = asyncio.ensure_future(answer())
        async with aqueduct.connect(f"aqueduct://127.0.0.1:{server.address[1]}", ca=certs.ca) as conn:
            for n in range(20):  # warm up
                assert await aqueduct.request(conn.entrypoint, lambda r, n=n: {"n": n, "reply": r}) == n
            loop.call_at = counting  # type: ignore[method-assign]
            try:
                for n in range(200):
                    assert await aqueduct.request(conn.entrypoint, lambda r, n=n: {"n": n, "reply": r}) == n
            finally:
                del loop.call_at  # type: ignore[method-assign]
        task.cancel()
    assert armed < 200
