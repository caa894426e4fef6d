"""aeron:udp between drivers of different clients on loopback, over each transport of the driver network.

Every test named with `medium` runs once per transport (media/transport.py): Aqueduct over QUIC
(`udp_media="aqueduct"`) and Marlin Stream (`transport=stream` on channels of clients whose default udp media
is the in-process loopback, so only those channels leave the process). What only one transport has (QUIC's
unreliable lane and driver-loop settings; Stream's framing limits and the `transport` parameter) is tested on
that one alone, at the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from aeron_compat import Aeron, ChannelUriStringBuilder, Context, InvalidChannelError
from aeron_compat.client.uri import ChannelUri
from aeron_compat.media.network import DriverNetwork
from aqueduct.api.connection import link_of
from tests.aeron.udp_helpers import forget_ports, offer, poll_whole, port, receive, wait_until

STREAM = 77


@dataclass(frozen=True)
class Medium:
    """One transport of the driver network, as the tests reach it."""

    name: str
    udp_media: str
    """The clients' Context.udp_media."""
    suffix: str
    """What a channel adds to travel on this transport."""

    def ch(self, params: str) -> str:
        return f"aeron:udp?{params}{self.suffix}"

    def network(self, client: Aeron) -> DriverNetwork:
        network = client.driver.stream_network if self is MARLIN else client.driver.network
        assert isinstance(network, DriverNetwork)
        return network

    def other_network(self, client: Aeron) -> object:
        """The driver's network of the other transport (None: never started)."""
        return client.driver._network if self is MARLIN else client.driver._stream_network

    def context(self, **kwargs: object) -> Context:
        return Context(udp_media=self.udp_media, counters_interval=0, **kwargs)  # type: ignore[arg-type]


AQUEDUCT = Medium("aqueduct", "aqueduct", "")
MARLIN = Medium("marlin", "loopback", "|transport=stream")


@pytest.fixture(autouse=True)
def fresh_ports() -> None:
    forget_ports()


def _clients(medium: Medium) -> Iterator[Callable[[], Aeron]]:
    errors: list[BaseException] = []
    opened: list[Aeron] = []

    def make() -> Aeron:
        client = Aeron.connect(medium.context(error_handler=errors.append))
        opened.append(client)
        return client

    yield make
    for client in reversed(opened):
        client.close()
    assert errors == []


@pytest.fixture(params=[AQUEDUCT, MARLIN], ids=lambda m: m.name)
def medium(request: pytest.FixtureRequest) -> Medium:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def aeron(medium: Medium) -> Iterator[Callable[[], Aeron]]:
    """Clients on `medium`, each with its own embedded driver; closed after the test, which fails on errors."""
    yield from _clients(medium)


@pytest.fixture
def quic() -> Iterator[Callable[[], Aeron]]:
    yield from _clients(AQUEDUCT)


@pytest.fixture
def stream() -> Iterator[Callable[[], Aeron]]:
    yield from _clients(MARLIN)


def ch(params: str) -> str:
    return MARLIN.ch(params)


# --- on every transport ------------------------------------------------------------------------------------------


def test_unicast_delivers_in_order_with_the_peer_as_source(medium: Medium, aeron: Callable[[], Aeron]) -> None:
    server, client = aeron(), aeron()
    sub = server.add_subscription(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    pub = client.add_publication(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    wait_until(lambda: pub.is_connected)
    messages = [bytes([i]) * (i * 20) for i in range(60)]
    for m in messages:
        offer(pub, m)
    assert receive(sub, 60) == messages
    (image,) = sub.images
    assert image.source_identity.startswith("127.0.0.1:") and image.session_id == pub.session_id
    assert medium.network(server).listeners.keys() == {f"127.0.0.1:{port(1)}"}
    assert medium.other_network(server) is None and medium.other_network(client) is None  # one transport started


def test_fragmented_messages_reassemble_across_the_network(medium: Medium, aeron: Callable[[], Aeron]) -> None:
    server, client = aeron(), aeron()
    sub = server.add_subscription(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    pub = client.add_publication(medium.ch(f"endpoint=localhost:{port(1)}|mtu=512"), STREAM)
    wait_until(lambda: pub.is_connected)
    big = bytes(range(256)) * 30
    offer(pub, big)
    assert poll_whole(sub, 100) == [big]


def test_big_messages_are_split_across_batches_and_reassembled(medium: Medium, aeron: Callable[[], Aeron]) -> None:
    from aeron_compat.media.sessions import BATCH_BYTES

    server, client = aeron(), aeron()
    sub = server.add_subscription(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    pub = client.add_publication(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    wait_until(lambda: pub.is_connected)
    big = bytes(range(256)) * (pub.max_message_length // 256)
    assert len(big) > 2 * BATCH_BYTES
    offer(pub, big)
    assert poll_whole(sub, 1000) == [big]


def test_window_back_pressures_until_the_subscriber_polls(medium: Medium, aeron: Callable[[], Aeron]) -> None:
    server, client = aeron(), aeron()
    sub = server.add_subscription(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    pub = client.add_publication(medium.ch(f"endpoint=localhost:{port(1)}|term-length=64k"), STREAM)
    wait_until(lambda: pub.is_connected)
    accepted = 0
    while pub.offer(bytes(96)) > 0:
        accepted += 1
    assert accepted == 32768 // 128 and pub.position_limit == 32768
    assert receive(sub, accepted) == [bytes(96)] * accepted
    wait_until(lambda: pub.offer(bytes(96)) > 0)


def test_two_sessions_each_arrive_in_order_on_their_own_image(medium: Medium, aeron: Callable[[], Aeron]) -> None:
    server, client = aeron(), aeron()
    sub = server.add_subscription(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    one = client.add_exclusive_publication(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    two = client.add_exclusive_publication(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    wait_until(lambda: one.is_connected and two.is_connected)
    for i in range(50):
        offer(one, b"one-%d" % i)
        offer(two, b"two-%d" % i)
    by_session: dict[int, list[bytes]] = {}
    wait_until(lambda: sub.poll(lambda buf, hdr: by_session.setdefault(hdr.session_id, []).append(bytes(buf)), 100)
               >= 0 and sum(map(len, by_session.values())) >= 100)
    assert by_session == {one.session_id: [b"one-%d" % i for i in range(50)],
                          two.session_id: [b"two-%d" % i for i in range(50)]}
    assert len(medium.network(client).out_links) == 1  # both sessions share the one connection


def test_session_specific_subscription_over_the_network(medium: Medium, aeron: Callable[[], Aeron]) -> None:
    server, client = aeron(), aeron()
    sub = server.add_subscription(medium.ch(f"endpoint=localhost:{port(1)}|session-id=5150"), STREAM)
    other = client.add_exclusive_publication(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    mine = client.add_exclusive_publication(medium.ch(f"endpoint=localhost:{port(1)}|session-id=5150"), STREAM)
    wait_until(lambda: mine.is_connected)
    assert not other.is_connected
    offer(mine, b"mine")
    assert receive(sub, 1) == [b"mine"] and [i.session_id for i in sub.images] == [5150]


def test_close_gives_end_of_stream_and_unavailable_image(medium: Medium, aeron: Callable[[], Aeron]) -> None:
    server, client = aeron(), aeron()
    gone: list[int] = []
    sub = server.add_subscription(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM,
                                  on_unavailable_image=lambda i: gone.append(i.session_id))
    pub = client.add_publication(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    wait_until(lambda: pub.is_connected)
    offer(pub, b"last")
    session = pub.session_id
    wait_until(lambda: bool(sub.images))
    image = sub.images[0]
    pub.close()
    assert receive(sub, 1) == [b"last"]
    wait_until(lambda: sub.poll(lambda b, h: None, 1) >= 0 and gone == [session])
    assert image.is_end_of_stream


def test_subscriber_leaving_disconnects_the_publication(medium: Medium, aeron: Callable[[], Aeron]) -> None:
    server, client = aeron(), aeron()
    sub = server.add_subscription(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    pub = client.add_publication(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    wait_until(lambda: pub.is_connected)
    sub.close()
    wait_until(lambda: not pub.is_connected)


def test_lost_connection_makes_images_unavailable_without_end_of_stream(medium: Medium,
                                                                         aeron: Callable[[], Aeron]) -> None:
    server, client = aeron(), aeron()
    gone: list[bool] = []
    sub = server.add_subscription(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM,
                                  on_unavailable_image=lambda i: gone.append(i.is_end_of_stream))
    pub = client.add_publication(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    wait_until(lambda: pub.is_connected)
    offer(pub, b"before the crash")
    assert receive(sub, 1) == [b"before the crash"]
    network = medium.network(client)
    (link,) = network.out_links.values()
    conn = link.conn  # type: ignore[attr-defined]  # an Aqueduct Link's or a MarlinLink's connection
    if medium is AQUEDUCT:
        network.call(lambda: link_of(conn).protocol.close_connection(0, "simulated crash"))
    else:
        network.call(conn.close)  # reset
    wait_until(lambda: sub.poll(lambda buf, hdr: None, 10) >= 0 and gone == [False])
    got: list[bytes] = []

    def offer_until_received() -> bool:  # offers into the dead connection's sink are lost, as in Aeron
        pub.offer(b"after redialling")
        sub.poll(lambda buf, hdr: got.append(bytes(buf)), 10)
        return bool(got)

    wait_until(offer_until_received)
    assert set(got) == {b"after redialling"} and server.counters["images_total"] == 2


async def test_driver_on_the_callers_loop_with_send_and_async_with(medium: Medium) -> None:
    async with Aeron.connect(medium.context()) as server, Aeron.connect(medium.context()) as client:
        sub = server.add_subscription(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
        assert medium.network(server).thread is None
        pub = client.add_publication(medium.ch(f"endpoint=localhost:{port(1)}|term-length=64k"), STREAM)
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


def test_stat_shows_the_drivers_connections(medium: Medium, aeron: Callable[[], Aeron]) -> None:
    from aeron_compat.tools.cli import format_snapshot

    server, client = aeron(), aeron()
    server.add_subscription(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    pub = client.add_publication(medium.ch(f"endpoint=localhost:{port(1)}"), STREAM)
    wait_until(lambda: pub.is_connected)
    assert f"serving 127.0.0.1:{port(1)} (1 connections)" in format_snapshot(server.driver.snapshot())
    assert f"connected to 127.0.0.1:{port(1)}" in format_snapshot(client.driver.snapshot())


# --- hostile peers, each in its transport's terms ----------------------------------------------------------------


def test_hostile_control_messages_are_counted_and_ignored_on_aqueduct(quic: Callable[[], Aeron]) -> None:
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


def test_hostile_control_messages_are_counted_and_ignored_on_marlin(stream: Callable[[], Aeron]) -> None:
    from aeron_compat.marlin.aio import StreamEndpoint
    from aeron_compat.media.marlin_link import encode_message, write_frame

    server = stream()
    sub = server.add_subscription(ch(f"endpoint=localhost:{port(1)}"), STREAM)
    pub = server.add_publication(ch(f"control=localhost:{port(2)}|control-mode=dynamic"), STREAM)
    server.driver.ctx.max_remote_subscriptions_per_link = 2
    setup = {"t": "setup", "sub": sub.registration_id, "stream": STREAM, "session": 1, "itid": 0, "tl": 1000,
             "mtu": 1408, "join": 0, "win": 10, "rel": True}

    async def attack() -> None:
        endpoint = await StreamEndpoint.bind()
        try:
            conn = await endpoint.dial(("127.0.0.1", port(2)))
            _, control = conn.open_stream()
            for msg in ({"t": "hello"}, {"t": "reg", "kind": "ctl", "sub": "x"}, {"t": "nope"}, setup,
                        *({"t": "reg", "kind": "ctl", "sub": n, "stream": 999, "session": None} for n in range(4))):
                write_frame(control, encode_message(msg))
            session_reader, session = conn.open_stream()
            write_frame(session, encode_message(setup))  # on a session stream, but an impossible term length
            assert await session_reader.read() == b""  # refused: the driver ends its half
            while server.counters["errors"] < 5:
                await asyncio.sleep(0.005)
        finally:
            endpoint.close()

    asyncio.run(asyncio.wait_for(attack(), 10))
    assert server.counters["errors"] == 5
    assert sub.images == [] and not pub.is_connected
    client = stream()
    mine = client.add_publication(ch(f"endpoint=localhost:{port(1)}"), STREAM)
    wait_until(lambda: mine.is_connected)


def test_a_peer_that_breaks_the_framing_is_dropped_and_others_carry_on(stream: Callable[[], Aeron]) -> None:
    from aeron_compat.marlin.aio import StreamEndpoint

    server, client = stream(), stream()
    sub = server.add_subscription(ch(f"endpoint=localhost:{port(1)}"), STREAM)

    async def hostile() -> bool:
        endpoint = await StreamEndpoint.bind()
        try:
            conn = await endpoint.dial(("127.0.0.1", port(1)))
            _, writer = conn.open_stream()
            writer.write(b"\xff\xff\xff\xff")  # a control frame of 4 GiB: refused before it is read
            await writer.drain()
            await conn.closed.wait()
            return True
        finally:
            endpoint.close()

    assert asyncio.run(asyncio.wait_for(hostile(), 10))
    pub = client.add_publication(ch(f"endpoint=localhost:{port(1)}"), STREAM)
    offer(pub, b"still here")
    assert receive(sub, 1) == [b"still here"]


def test_a_session_frame_above_its_limit_loses_the_image_and_is_counted(stream: Callable[[], Aeron]) -> None:
    from aeron_compat.marlin.aio import StreamEndpoint
    from aeron_compat.media.marlin_link import encode_message, write_frame
    from aeron_compat.media.marlin_session import FRAME_LIMIT

    server = stream()
    lost: list[int] = []
    sub = server.add_subscription(ch(f"endpoint=localhost:{port(1)}"), STREAM,
                                  on_unavailable_image=lambda i: lost.append(i.session_id))

    async def hostile() -> None:
        endpoint = await StreamEndpoint.bind()
        try:
            conn = await endpoint.dial(("127.0.0.1", port(1)))
            _, control = conn.open_stream()
            write_frame(control, encode_message({"t": "hello"}))
            _, data = conn.open_stream()
            write_frame(data, encode_message({"t": "setup", "sub": sub.registration_id, "stream": STREAM,
                                              "session": 99, "itid": 0, "tl": 65536, "mtu": 1408, "join": 0,
                                              "win": 32768, "rel": True, "rcid": 0}))
            data.write((FRAME_LIMIT + 1).to_bytes(4, "little"))
            await data.drain()
            while not (sub.poll(lambda b, h: None, 1) >= 0 and lost):  # the connection stays up meanwhile
                await asyncio.sleep(0.001)
        finally:
            endpoint.close()

    asyncio.run(asyncio.wait_for(hostile(), 10))
    assert lost == [99]
    assert server.driver.counters.values["errors"] >= 1


# --- Aqueduct over QUIC only -------------------------------------------------------------------------------------


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


def test_endpoint_can_be_served_again_after_its_last_subscription_closes(quic: Callable[[], Aeron]) -> None:
    server, client = quic(), quic()
    server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25200)}", STREAM).close()
    sub = server.add_subscription(f"aeron:udp?endpoint=localhost:{port(25200)}", STREAM)
    pub = client.add_publication(f"aeron:udp?endpoint=localhost:{port(25200)}", STREAM)
    wait_until(lambda: pub.is_connected)
    offer(pub, b"again")
    assert receive(sub, 1) == [b"again"]


async def test_driver_loop_setting_picks_a_thread_even_under_a_running_loop() -> None:
    async with Aeron.connect(Context(udp_media="aqueduct", counters_interval=0, driver_loop="thread")) as client:
        client.add_subscription(f"aeron:udp?endpoint=localhost:{port(25240)}", STREAM)
        assert client.driver.network.thread is not None


def test_caller_loop_without_a_running_loop_is_refused() -> None:
    from aeron_compat import RegistrationError

    with Aeron.connect(Context(udp_media="aqueduct", counters_interval=0, driver_loop="caller")) as client, \
            pytest.raises(RegistrationError, match="driver_loop"):
        client.add_subscription(f"aeron:udp?endpoint=localhost:{port(25250)}", STREAM)


# --- Marlin Stream only: its MDC and response channels, and the `transport` parameter ----------------------------


def test_manual_mdc_remove_destination_makes_the_image_unavailable(stream: Callable[[], Aeron]) -> None:
    server, one, two = stream(), stream(), stream()
    lost: list[int] = []
    a = one.add_subscription(ch(f"endpoint=localhost:{port(1)}"), STREAM)
    b = two.add_subscription(ch(f"endpoint=localhost:{port(2)}"), STREAM, on_unavailable_image=lambda i: lost.append(
        i.session_id))
    pub = server.add_publication(ch("control-mode=manual"), STREAM)
    pub.add_destination(ch(f"endpoint=localhost:{port(1)}"))
    pub.add_destination(ch(f"endpoint=localhost:{port(2)}"))
    wait_until(lambda: len(a.images) == 1 and len(b.images) == 1)
    offer(pub, b"both")
    assert receive(a, 1) == [b"both"] and receive(b, 1) == [b"both"]
    pub.remove_destination(ch(f"endpoint=localhost:{port(2)}"))
    wait_until(lambda: b.poll(lambda buf, hdr: None, 10) >= 0 and lost == [pub.session_id])
    assert not any(image.is_end_of_stream for image in b.images)
    offer(pub, b"one only")
    assert receive(a, 1) == [b"one only"]


def test_dynamic_mdc_and_response_channels_use_connections_the_subscribers_opened(stream: Callable[[], Aeron]) -> None:
    server, client = stream(), stream()
    mdc = server.add_publication(ch(f"control=localhost:{port(1)}|control-mode=dynamic"), STREAM)
    a = client.add_subscription(ch(f"endpoint=localhost:0|control=localhost:{port(1)}"), STREAM)
    wait_until(lambda: mdc.is_connected)
    offer(mdc, b"mdc")
    assert receive(a, 1) == [b"mdc"]
    server_sub = server.add_subscription(ch(f"endpoint=localhost:{port(2)}"), STREAM)
    reply_sub = client.add_subscription(ch(f"control-mode=response|control=localhost:{port(2)}"), STREAM)
    pub = client.add_publication(
        ch(f"endpoint=localhost:{port(2)}|response-correlation-id={reply_sub.registration_id}"), STREAM)
    wait_until(lambda: pub.is_connected)
    offer(pub, b"ping")
    assert receive(server_sub, 1) == [b"ping"]
    image = server_sub.images[0]
    with pytest.raises(Exception, match="transport"):  # the reply must travel where the request came from
        server.add_publication(f"aeron:udp?control-mode=response|response-correlation-id={image.correlation_id}",
                               STREAM)
    reply = server.add_publication(ch(f"control-mode=response|response-correlation-id={image.correlation_id}"), STREAM)
    wait_until(lambda: reply.is_connected)
    offer(reply, b"pong")
    assert receive(reply_sub, 1) == [b"pong"]
    assert client.driver.stream_network.listeners.keys() == {a.resolved_endpoint}  # the reply needed none


@pytest.mark.parametrize(("channel", "named"), [
    ("aeron:udp?endpoint=localhost:1|transport=tcp", "transport"),
    ("aeron:udp?endpoint=localhost:1|transport=", "transport"),
    ("aeron:udp?endpoint=localhost:1|transport=Stream", "transport"),
    ("aeron:ipc?transport=stream", "transport"),
])
def test_unknown_or_misplaced_transports_are_refused(channel: str, named: str) -> None:
    with pytest.raises(InvalidChannelError, match=f"^{named}: "):
        ChannelUri.parse(channel)
    assert ChannelUri.parse("aeron:udp?endpoint=localhost:1|transport=stream").get("transport") == "stream"
    built = ChannelUriStringBuilder().media("udp").endpoint("localhost:1").transport("stream").build()
    assert built == "aeron:udp?endpoint=localhost:1|transport=stream"


def test_a_client_refuses_an_unknown_transport(stream: Callable[[], Aeron]) -> None:
    client = stream()
    with pytest.raises(InvalidChannelError, match="transport: 'udp' is not one of native, stream"):
        client.add_publication("aeron:udp?endpoint=localhost:1|transport=udp", STREAM)
