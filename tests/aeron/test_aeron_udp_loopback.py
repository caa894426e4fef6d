"""aeron:udp semantics between drivers of one process (loopback media): unicast, MDC, response."""

from __future__ import annotations

import pytest

from aeron_compat import Aeron, Context, RegistrationError

STREAM = 1001


def drain(sub) -> list[bytes]:  # type: ignore[no-untyped-def]
    out: list[bytes] = []
    sub.poll(lambda buf, hdr: out.append(bytes(buf)), 1000)
    return out


def test_unicast_between_two_drivers(aeron: Aeron, aeron2: Aeron) -> None:
    sub = aeron.add_subscription("aeron:udp?endpoint=localhost:24325", STREAM)
    pub = aeron2.add_publication("aeron:udp?endpoint=127.0.0.1:24325", STREAM)
    assert pub.is_connected
    pub.offer(b"over the wire")
    assert drain(sub) == [b"over the wire"]
    (image,) = sub.images
    assert image.source_identity == aeron2.driver.address
    assert image.source_identity.startswith("127.0.0.1:")


def test_publication_waits_for_a_late_subscription(aeron: Aeron, aeron2: Aeron) -> None:
    pub = aeron2.add_publication("aeron:udp?endpoint=localhost:24326", STREAM)
    assert not pub.is_connected
    sub = aeron.add_subscription("aeron:udp?endpoint=localhost:24326", STREAM)
    assert pub.is_connected and pub.offer(b"x") > 0 and drain(sub) == [b"x"]


def test_endpoint_bound_by_another_driver_is_refused(aeron: Aeron, aeron2: Aeron) -> None:
    aeron.add_subscription("aeron:udp?endpoint=localhost:24327", STREAM)
    aeron.add_subscription("aeron:udp?endpoint=localhost:24327", STREAM + 1)
    with pytest.raises(RegistrationError, match="endpoint"):
        aeron2.add_subscription("aeron:udp?endpoint=localhost:24327", STREAM)


def test_ephemeral_port_is_resolved(aeron: Aeron) -> None:
    sub = aeron.add_subscription("aeron:udp?endpoint=localhost:0", STREAM)
    assert sub.resolved_endpoint is not None and not sub.resolved_endpoint.endswith(":0")


def test_dynamic_mdc_delivers_to_two_subscribers(aeron: Aeron, aeron2: Aeron) -> None:
    pub = aeron.add_publication("aeron:udp?control=localhost:24330|control-mode=dynamic", STREAM)
    one = aeron2.add_subscription("aeron:udp?endpoint=localhost:0|control=localhost:24330", STREAM)
    with Aeron.connect(Context(udp_media="loopback")) as third:
        two = third.add_subscription("aeron:udp?endpoint=localhost:0|control=localhost:24330|control-mode=dynamic",
                                     STREAM)
        pub.offer(b"to all")
        assert drain(one) == [b"to all"] and drain(two) == [b"to all"]
    pub.offer(b"after one left")
    assert drain(one) == [b"after one left"]


def test_manual_mdc_add_and_remove_mid_stream(aeron: Aeron, aeron2: Aeron) -> None:
    pub = aeron.add_publication("aeron:udp?control=localhost:24340|control-mode=manual", STREAM)
    lost: list[int] = []
    a = aeron2.add_subscription("aeron:udp?endpoint=localhost:24341", STREAM)
    b = aeron2.add_subscription("aeron:udp?endpoint=localhost:24342", STREAM,
                                on_unavailable_image=lambda i: lost.append(i.session_id))
    assert not pub.is_connected
    pub.add_destination("aeron:udp?endpoint=localhost:24341")
    pub.offer(b"1")
    pub.add_destination("aeron:udp?endpoint=localhost:24342")
    pub.offer(b"2")
    assert drain(a) == [b"1", b"2"] and drain(b) == [b"2"]
    assert b.images[0].join_position == 64
    pub.remove_destination("aeron:udp?endpoint=localhost:24342")
    pub.offer(b"3")
    assert drain(a) == [b"3"] and drain(b) == []
    assert lost == [pub.session_id] and pub.destinations == ["127.0.0.1:24341"]


def test_destinations_need_manual_mode(aeron: Aeron) -> None:
    pub = aeron.add_publication("aeron:udp?endpoint=localhost:24350", STREAM)
    with pytest.raises(RegistrationError, match="control-mode"):
        pub.add_destination("aeron:udp?endpoint=localhost:24351")


def test_response_channel_answers_the_image(aeron: Aeron, aeron2: Aeron) -> None:
    server_sub = aeron.add_subscription("aeron:udp?endpoint=localhost:24360", STREAM)
    client_sub = aeron2.add_subscription("aeron:udp?control-mode=response|control=localhost:24360", STREAM)
    client_pub = aeron2.add_publication(
        f"aeron:udp?endpoint=localhost:24360|response-correlation-id={client_sub.registration_id}", STREAM)
    client_pub.offer(b"ping")
    (image,) = server_sub.images
    reply = aeron.add_publication(
        f"aeron:udp?control-mode=response|response-correlation-id={image.correlation_id}", STREAM)
    assert reply.is_connected
    assert drain(server_sub) == [b"ping"]
    reply.offer(b"pong")
    assert drain(client_sub) == [b"pong"]


def test_response_needs_a_known_image(aeron: Aeron) -> None:
    with pytest.raises(RegistrationError, match="response-correlation-id"):
        aeron.add_publication("aeron:udp?control-mode=response|response-correlation-id=999999999", STREAM)


def test_driver_close_ends_remote_images(aeron: Aeron) -> None:
    sub = aeron.add_subscription("aeron:udp?endpoint=localhost:24370", STREAM)
    with Aeron.connect(Context(udp_media="loopback")) as other:
        other.add_publication("aeron:udp?endpoint=localhost:24370", STREAM).offer(b"bye")
    assert drain(sub) == [b"bye"] and sub.images == []
