"""A hostile peer's payloads against a typed service (issue 26, items 1 and 2), over real connections.

A client announcing the CBOR codec sends crafted bytes (payloads.py) to a `serve(entrypoint=Ask)` server whose
handler is written as README shows: it catches ValidationError and goes on. Every payload must surface as
ValidationError (or be skipped / close the receiver per `on_invalid`), quickly, with the halves it carried
ended, and the same channel must serve the next good message. An untyped receiver gets CodecError, an
AqueductError, and goes on too. The hypothesis test sends arbitrary bytes: only an Ask or ValidationError.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import cbor2
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aqueduct
from aqueduct import CodecError, OneshotSender, RawMessage, Receiver
from aqueduct.api.codec import LAGGED_TAG
from aqueduct.quic.certs import DevCerts

from .conftest import guard, running
from .payloads import ATTACKS, ForgedCbor, shared_dag


class Ask(msgspec.Struct):
    sym: str
    reply: OneshotSender[str]


@contextlib.asynccontextmanager
async def typed_desk(certs: DevCerts, on_invalid: str = "raise", entrypoint: Any = Ask
                     ) -> AsyncIterator[tuple[aqueduct.Connection[Any], asyncio.Queue[Any]]]:
    """A server whose handler answers each Ask and reports what `recv` gave (a value or the exception it
    raised, any type: the test says which are allowed); yields a forging client's connection and the reports."""
    seen: asyncio.Queue[Any] = asyncio.Queue()

    async def desk(conn: aqueduct.Connection[Receiver[Any]]) -> None:
        rx = conn.entrypoint
        rx.on_invalid = on_invalid  # type: ignore[assignment]
        while True:
            try:
                ask = await rx.recv()
            except aqueduct.ChannelFinished:
                return
            except Exception as exc:  # (README's handler catches only ValidationError; here we record anything)
                seen.put_nowait(exc)
                if isinstance(exc, aqueduct.ChannelClosed):
                    return
                continue
            seen.put_nowait(ask)
            reply = ask.reply if isinstance(ask, Ask) else ask.get("reply") if isinstance(ask, dict) else None
            if reply is not None:
                await reply.send(f"quote {ask.sym if isinstance(ask, Ask) else ask.get('sym')}")

    kwargs = {} if entrypoint is None else {"entrypoint": entrypoint}
    async with running(certs, desk, **kwargs) as (url, _), \
            aqueduct.connect(url, ca=certs.ca, codec=ForgedCbor()) as conn:
        yield conn, seen


async def ask(conn: aqueduct.Connection[Any], seen: asyncio.Queue[Any], sym: str) -> None:
    """A good request on the same channel: answered."""
    reply_tx, reply_rx = aqueduct.oneshot()
    await conn.entrypoint.send({"sym": sym, "reply": reply_tx})
    got = await guard(seen.get())
    assert isinstance(got, Ask | dict) and not isinstance(got, Exception), got
    assert await guard(reply_rx.recv()) == f"quote {sym}"


async def send_raw(conn: aqueduct.Connection[Any], payload: bytes, attachments: int) -> list[Any]:
    """Send `payload` as it is with `attachments` reply channels attached; their receivers."""
    pairs = [aqueduct.oneshot() for _ in range(attachments)]
    await conn.entrypoint.send(RawMessage(payload, [tx for tx, _ in pairs]))
    return [rx for _, rx in pairs]


@pytest.mark.parametrize("name", list(ATTACKS))
async def test_a_crafted_payload_is_a_validation_error_and_the_channel_goes_on(certs: DevCerts, name: str) -> None:
    payload, attachments = ATTACKS[name]
    async with typed_desk(certs) as (conn, seen):
        await ask(conn, seen, "before")
        receivers = await send_raw(conn, payload, attachments)
        error = await guard(seen.get())
        assert type(error) is aqueduct.ValidationError, repr(error)
        assert error.path.startswith("$") and "invalid message on" in str(error)
        for rx in receivers:  # the halves the refused message carried end at once, not when collected
            with pytest.raises(aqueduct.ChannelCancelled):
                await guard(rx.recv())
        await ask(conn, seen, "after")  # the same channel, the same connection


async def test_a_value_sharing_dag_is_refused_by_the_decoder(certs: DevCerts) -> None:
    """A DAG that fits the type (a list of lists) would otherwise reach the application as a tree of 2**40
    leaves: the decoder refuses tags 28/29 (decision SEC-5)."""
    async with typed_desk(certs, entrypoint=list[Any]) as (conn, seen):
        await send_raw(conn, shared_dag(40), 0)
        error = await guard(seen.get())
        assert type(error) is aqueduct.ValidationError and "value sharing" in str(error)


async def test_nesting_beyond_the_codecs_depth_is_refused_and_within_it_arrives(certs: DevCerts) -> None:
    deep: Any = 0
    for _ in range(aqueduct.CborCodec.max_depth):
        deep = [deep]
    async with typed_desk(certs, entrypoint=list[Any]) as (conn, seen):
        await send_raw(conn, cbor2.dumps(deep), 0)
        assert await guard(seen.get()) == deep
        await send_raw(conn, cbor2.dumps([deep]), 0)
        error = await guard(seen.get())
        assert type(error) is aqueduct.ValidationError and "nesting" in str(error)


@pytest.mark.parametrize("policy", ["drop", "close"])
async def test_on_invalid_applies_to_payloads_that_do_not_decode(certs: DevCerts, policy: str) -> None:
    async with typed_desk(certs, on_invalid=policy) as (conn, seen):
        [rx] = await send_raw(conn, b"\xff", 1)
        # the halves it carried end at once: cancelled; or, when "close" nacks the message first (decision API-34),
        # lost with it (the protocol's cascading loss)
        with pytest.raises(aqueduct.ChannelCancelled if policy == "drop" else (aqueduct.ChannelCancelled,
                                                                                aqueduct.ChannelLost)):
            await guard(rx.recv())
        if policy == "drop":
            await ask(conn, seen, "next")  # the bad one was skipped: the next recv gave the good one
        else:
            error = await guard(seen.get())
            assert type(error) is aqueduct.ValidationError
            assert isinstance(await guard(seen.get()), aqueduct.ChannelClosed)  # the receiver was closed


async def test_an_untyped_receiver_gets_codec_error_and_goes_on(certs: DevCerts) -> None:
    async with typed_desk(certs, entrypoint=None) as (conn, seen):
        for name in ("0xff", "truncated", "lagged-tag", "self-list", "attachment-7"):
            payload, attachments = ATTACKS[name]
            await send_raw(conn, payload, attachments)
            error = await guard(seen.get())
            assert type(error) is CodecError and isinstance(error, aqueduct.AqueductError), (name, error)
        await ask(conn, seen, "after")


async def test_a_lag_notice_still_reaches_a_subscriber_that_travelled(certs: DevCerts) -> None:
    """The broadcast's own notice (a whole payload, on a receiver that arrived in a message) is Lagged; the
    same bytes on the entrypoint are not (test above)."""
    got: asyncio.Queue[Any] = asyncio.Queue()

    async def listener(conn: aqueduct.Connection[Any]) -> None:
        async for msg in conn.entrypoint:
            feed: Receiver[Any] = msg["feed"]
            while True:
                try:
                    got.put_nowait(await feed.recv())
                except aqueduct.Lagged as exc:
                    got.put_nowait(exc)
                except aqueduct.ChannelFinished:
                    break

    async with running(certs, listener) as (url, _), aqueduct.connect(url, ca=certs.ca, codec=ForgedCbor()) as conn:
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"feed": rx})
        await tx.send(RawMessage(cbor2.dumps(cbor2.CBORTag(LAGGED_TAG, 4))))
        lag = await guard(got.get())
        assert type(lag) is aqueduct.Lagged and lag.n == 4
        # not the whole payload: an unknown tag like any other (data, on an untyped channel)
        await tx.send(RawMessage(cbor2.dumps([cbor2.CBORTag(LAGGED_TAG, 4)])))
        assert await guard(got.get()) == [cbor2.CBORTag(LAGGED_TAG, 4)]
        await tx.send(RawMessage(cbor2.dumps("on")))
        assert await guard(got.get()) == "on"
        await tx.finish()


def test_arbitrary_bytes_to_a_typed_receiver_give_a_t_or_validation_error(certs: DevCerts) -> None:
    """One server and connection for every example, on a loop the examples drive in turn."""
    loop = asyncio.new_event_loop()
    desk = typed_desk(certs)
    conn, seen = loop.run_until_complete(desk.__aenter__())

    async def one(payload: bytes, attachments: int) -> None:
        await send_raw(conn, payload, attachments)
        got = await guard(seen.get())
        assert isinstance(got, Ask) or type(got) is aqueduct.ValidationError, repr(got)

    payloads = st.binary(max_size=256) | st.builds(
        lambda prefix, tail: prefix + tail,
        st.sampled_from([b"\xa2", b"\x82", b"\xd8\x1c", b"\xd8\x1d", b"\xd9\x61\x71", b"\xd9\x61\x72", b"\x9f"]),
        st.binary(max_size=64))

    @settings(max_examples=300, deadline=None)
    @given(payloads, st.integers(0, 2))
    def arbitrary(payload: bytes, attachments: int) -> None:
        loop.run_until_complete(one(payload, attachments))

    try:
        arbitrary()
        loop.run_until_complete(ask(conn, seen, "still served"))
    finally:
        loop.run_until_complete(desk.__aexit__(None, None, None))
        loop.close()
