"""aeron:udp carried by Aqueduct over QUIC on loopback: each Aeron client has its own driver/endpoint."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from aeron_compat import Aeron, Context
from aqueduct.api.connection import link_of
from tests.aeron.udp_helpers import forget_ports, offer, poll_whole, port, receive, wait_until

STREAM = 77


@pytest.fixture(autouse=True)
def fresh_ports() -> None:
    forget_ports()


@pytest.fixture
def quic() -> Iterator[Callable[[], Aeron]]:
    errors: list[BaseException] = []
    opened: list[Aeron] = []

    def make() -> Aeron:
        client = Aeron.connect(Context(udp_media="aqueduct", counters_interval=0, error_handler=errors.append))
        opened.append(client)
        return client

    yield make
    for client in reversed(opened):
        client.close()
    assert errors == []


def test_unicast_delivers_in_order_with_the_peer_as_source(quic: Callable[[], Aeron]) -> None:
    server, client = quic(), quic()
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25100)}", STREAM)
    pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25100)}", STREAM)
    wait_until(lambda: pub.is_connected)
    messages = [bytes([i]) * (i * 20) for i in range(60)]
    for m in messages:
        offer(pub, m)
    assert receive(sub, 60) == messages
    (image,) = sub.images
    assert image.source_identity.startswith("127.0.0.1:") and image.session_id == pub.session_id


def test_fragmented_messages_reassemble_across_the_network(quic: Callable[[], Aeron]) -> None:
    server, client = quic(), quic()
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25110)}", STREAM)
    pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25110)}|mtu=512", STREAM)
    wait_until(lambda: pub.is_connected)
    big = bytes(range(256)) * 30
    offer(pub, big)
    assert poll_whole(sub, 100) == [big]


def test_window_back_pressures_until_the_subscriber_polls(quic: Callable[[], Aeron]) -> None:
    server, client = quic(), quic()
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25120)}", STREAM)
    pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25120)}|term-length=64k", STREAM)
    wait_until(lambda: pub.is_connected)
    accepted = 0
    while pub.offer(bytes(96)) > 0:
        accepted += 1
    assert accepted == 32768 // 128 and pub.position_limit == 32768
    assert receive(sub, accepted) == [bytes(96)] * accepted
    wait_until(lambda: pub.offer(bytes(96)) > 0)


def test_close_gives_end_of_stream_and_unavailable_image(quic: Callable[[], Aeron]) -> None:
    server, client = quic(), quic()
    gone: list[int] = []
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25130)}", STREAM,
                                  on_unavailable_image=lambda i: gone.append(i.session_id))
    pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25130)}", STREAM)
    wait_until(lambda: pub.is_connected)
    offer(pub, b"last")
    session = pub.session_id
    image_holder = []
    wait_until(lambda: bool(image_holder.extend(sub.images) or image_holder))
    pub.close()
    assert receive(sub, 1) == [b"last"]
    wait_until(lambda: sub.poll(lambda b, h: None, 1) >= 0 and gone == [session])
    assert image_holder[0].is_end_of_stream


def test_dynamic_mdc_reaches_two_subscribers_over_their_own_connections(quic: Callable[[], Aeron]) -> None:
    server, one, two = quic(), quic(), quic()
    pub = server.add_publication(f"aeron:udp?control=localhost:{port(25140)}|control-mode=dynamic", STREAM)
    a = one.add_subscription(f"aeron:udp?endpoint=localhost:0|control=localhost:{port(25140)}", STREAM)
    b = two.add_subscription(
        f"aeron:udp?endpoint=localhost:0|control=localhost:{port(25140)}|control-mode=dynamic", STREAM)
    wait_until(lambda: len(pub._log.sinks) == 2)
    offer(pub, b"to everyone")
    assert receive(a, 1) == [b"to everyone"] and receive(b, 1) == [b"to everyone"]


def test_manual_mdc_add_and_remove_destination_mid_stream(quic: Callable[[], Aeron]) -> None:
    server, one, two = quic(), quic(), quic()
    lost: list[int] = []
    a = one.add_subscription(f"aeron:udp?endpoint=localhost:{port(25151)}", STREAM)
    b = two.add_subscription(f"aeron:udp?endpoint=localhost:{port(25152)}", STREAM,
                             on_unavailable_image=lambda i: lost.append(i.session_id))
    pub = server.add_publication(f"aeron:udp?control=localhost:{port(25150)}|control-mode=manual", STREAM)
    pub.add_destination(f"aeron:udp?endpoint=localhost:{port(25151)}")
    wait_until(lambda: pub.is_connected)
    offer(pub, b"1")
    pub.add_destination(f"aeron:udp?endpoint=localhost:{port(25152)}")
    wait_until(lambda: len(pub._log.sinks) == 2)
    offer(pub, b"2")
    assert receive(a, 2) == [b"1", b"2"] and receive(b, 1) == [b"2"]
    pub.remove_destination(f"aeron:udp?endpoint=localhost:{port(25152)}")
    offer(pub, b"3")
    assert receive(a, 1) == [b"3"]
    wait_until(lambda: b.poll(lambda buf, hdr: None, 10) >= 0 and lost == [pub.session_id])


def test_session_specific_subscription_over_the_network(quic: Callable[[], Aeron]) -> None:
    server, client = quic(), quic()
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25160)}|session-id=5150", STREAM)
    other = client.add_exclusive_publication(f"aeron:udp?endpoint=localhost:{port(25160)}", STREAM)
    mine = client.add_exclusive_publication(f"aeron:udp?endpoint=localhost:{port(25160)}|session-id=5150", STREAM)
    wait_until(lambda: mine.is_connected)
    assert not other.is_connected
    offer(mine, b"mine")
    assert receive(sub, 1) == [b"mine"] and [i.session_id for i in sub.images] == [5150]


def test_response_channel_returns_on_the_clients_connection(quic: Callable[[], Aeron]) -> None:
    server, client = quic(), quic()
    server_sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25170)}", STREAM)
    reply_sub = client.add_subscription(f"aeron:udp?control-mode=response|control=localhost:{port(25170)}", STREAM)
    pub = client.add_publication(
        f"aeron:udp?endpoint=localhost:{port(25170)}|response-correlation-id={reply_sub.registration_id}", STREAM)
    wait_until(lambda: pub.is_connected)
    offer(pub, b"ping")
    assert receive(server_sub, 1) == [b"ping"]
    image = server_sub.images[0]
    reply = server.add_publication(
        f"aeron:udp?control-mode=response|response-correlation-id={image.correlation_id}", STREAM)
    wait_until(lambda: reply.is_connected)
    offer(reply, b"pong")
    assert receive(reply_sub, 1) == [b"pong"]
    assert server.driver.network.listeners.keys() == {f"127.0.0.1:{port(25170)}"}
    assert client.driver.network.listeners == {}


def test_unreliable_lane_delivers_small_frames(quic: Callable[[], Aeron]) -> None:
    server, client = quic(), quic()
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25180)}", STREAM)
    pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25180)}|reliable=false", STREAM)
    wait_until(lambda: pub.is_connected)
    for i in range(20):
        offer(pub, b"u%d" % i)
    got = receive(sub, 20)
    assert got == [b"u%d" % i for i in range(20)]


def test_subscriber_driver_leaving_disconnects_the_publication(quic: Callable[[], Aeron]) -> None:
    server, client = quic(), quic()
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25190)}", STREAM)
    pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25190)}", STREAM)
    wait_until(lambda: pub.is_connected)
    sub.close()
    wait_until(lambda: not pub.is_connected)


def test_endpoint_can_be_served_again_after_its_last_subscription_closes(quic: Callable[[], Aeron]) -> None:
    server, client = quic(), quic()
    server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25200)}", STREAM).close()
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25200)}", STREAM)
    pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25200)}", STREAM)
    wait_until(lambda: pub.is_connected)
    offer(pub, b"again")
    assert receive(sub, 1) == [b"again"]


async def test_driver_on_the_callers_loop_with_send_and_async_with() -> None:
    import asyncio

    from aeron_compat import Context as Ctx

    async with Aeron.connect(Ctx(udp_media="aqueduct", counters_interval=0)) as server, \
            Aeron.connect(Ctx(udp_media="aqueduct", counters_interval=0)) as client:
        assert server.driver.network.thread is None
        sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25210)}", STREAM)
        pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25210)}|term-length=64k", STREAM)
        received: list[bytes] = []

        async def consume() -> None:
            while len(received) < 2000:
                if not sub.poll(lambda buf, hdr: received.append(bytes(buf)), 256):
                    await asyncio.sleep(0)

        consumer = asyncio.create_task(consume())
        for i in range(2000):
            await pub.send(i.to_bytes(4, "little") * 16, timeout=10)
        await asyncio.wait_for(consumer, 20)
        assert received == [i.to_bytes(4, "little") * 16 for i in range(2000)]
        assert client.counters["back_pressure_events"] > 0


def test_lost_connection_makes_images_unavailable_without_end_of_stream(quic: Callable[[], Aeron]) -> None:
    server, client = quic(), quic()
    gone: list[bool] = []
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25220)}", STREAM,
                                  on_unavailable_image=lambda i: gone.append(i.is_end_of_stream))
    pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25220)}", STREAM)
    wait_until(lambda: pub.is_connected)
    offer(pub, b"before the crash")
    assert receive(sub, 1) == [b"before the crash"]
    network = client.driver.network
    (link,) = network.out_links.values()
    network.call(lambda: link_of(link.conn).protocol.close_connection(0, "simulated crash"))
    wait_until(lambda: sub.poll(lambda buf, hdr: None, 10) >= 0 and gone == [False])
    got: list[bytes] = []

    def offer_until_received() -> bool:  # offers into the dead connection's sink are lost, as in Aeron
        pub.offer(b"after redialling")
        sub.poll(lambda buf, hdr: got.append(bytes(buf)), 10)
        return bool(got)

    wait_until(offer_until_received)
    assert set(got) == {b"after redialling"} and server.counters["images_total"] == 2


def test_hostile_control_messages_are_counted_and_ignored(quic: Callable[[], Aeron]) -> None:
    import asyncio

    from aeron_compat.media.aqueduct_link import dev_certs
    from aqueduct.api import channel, connect

    server = quic()
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25230)}", STREAM)
    pub = server.add_publication(f"aeron:udp?control=localhost:{port(25231)}|control-mode=dynamic", STREAM)
    server.driver.ctx.max_remote_subscriptions_per_link = 2

    async def attack() -> None:
        async with connect(f"aqueduct://127.0.0.1:{port(25231)}", ca=dev_certs().ca) as conn:
            back_tx, _ = channel()
            await conn.entrypoint.send({"t": "hello", "back": back_tx})
            _, data_rx = channel()
            status_tx, _ = channel()
            for msg in ({"t": "reg", "kind": "ctl", "sub": "x"}, "not a dict", {"t": "nope"},
                        {"t": "setup", "sub": sub.registration_id, "stream": STREAM, "session": 1, "itid": 0,
                         "tl": 1000, "mtu": 1408, "join": 0, "win": 10, "rel": True, "data": data_rx,
                         "status": status_tx},
                        *({"t": "reg", "kind": "ctl", "sub": n, "stream": 999, "session": None} for n in range(4))):
                await conn.entrypoint.send(msg)
            deadline = asyncio.get_running_loop().time() + 10
            while server.counters["errors"] < 4 and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.005)

    asyncio.run(attack())
    assert server.counters["errors"] == 4
    assert sub.images == [] and not pub.is_connected
    client = quic()
    mine = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25230)}", STREAM)
    wait_until(lambda: mine.is_connected)


async def test_driver_loop_setting_picks_a_thread_even_under_a_running_loop() -> None:
    async with Aeron.connect(Context(udp_media="aqueduct", counters_interval=0, driver_loop="thread")) as client:
        client.add_subscription(f"aeron:udp?endpoint=localhost:{port(25240)}", STREAM)
        assert client.driver.network.thread is not None


def test_caller_loop_without_a_running_loop_is_refused() -> None:
    from aeron_compat import RegistrationError

    with Aeron.connect(Context(udp_media="aqueduct", counters_interval=0, driver_loop="caller")) as client, \
            pytest.raises(RegistrationError, match="driver_loop"):
        client.add_subscription(f"aeron:udp?endpoint=localhost:{port(25250)}", STREAM)


def test_big_messages_are_split_across_batches_and_reassembled(quic: Callable[[], Aeron]) -> None:
    from aeron_compat.media.sessions import BATCH_BYTES

    server, client = quic(), quic()
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25260)}", STREAM)
    pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25260)}", STREAM)
    wait_until(lambda: pub.is_connected)
    big = bytes(range(256)) * (pub.max_message_length // 256)
    assert len(big) > 2 * BATCH_BYTES
    offer(pub, big)
    assert poll_whole(sub, 1000) == [big]


def test_stat_shows_the_drivers_connections(quic: Callable[[], Aeron]) -> None:
    from aeron_compat.tools.cli import format_snapshot

    server, client = quic(), quic()
    server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25270)}", STREAM)
    pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25270)}", STREAM)
    wait_until(lambda: pub.is_connected)
    assert f"serving 127.0.0.1:{port(25270)} (1 connections)" in format_snapshot(server.driver.snapshot())
    assert f"connected to 127.0.0.1:{port(25270)}" in format_snapshot(client.driver.snapshot())
