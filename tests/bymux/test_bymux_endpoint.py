"""The sans-I/O endpoint: codec, local rules, handshakes, id reuse, credit, fairness, chunking."""

from __future__ import annotations

import pytest
from bymux_helpers import credited_stream, drain, packets, pair, pump
from hypothesis import given, settings
from hypothesis import strategies as st

from aeron_compat.bymux import (
    INFINITE,
    CloseReceived,
    ConnectionTerminated,
    CreditReceived,
    DataReceived,
    Endpoint,
    PacketHead,
    PacketType,
    PongReceived,
    StreamEnded,
    StreamOpened,
    UsageError,
)
from aeron_compat.bymux.codec import decode_head, encode_head, width_code
from aeron_compat.bymux.credit import restore_amount

# ------------------------------------------------------------------ codec


@pytest.mark.parametrize(
    ("hex_bytes", "head"),
    [
        ("1001", PacketHead(PacketType.CREDIT, None, 1)),
        ("3000", PacketHead(PacketType.WRITE, None, 0)),
        ("200003", PacketHead(PacketType.WRITE, 0, 3)),
        ("4005", PacketHead(PacketType.PING, 5)),
        ("70", PacketHead(PacketType.PONG, None)),
        ("840100", PacketHead(PacketType.CLOSE, 256)),
        ("b0", PacketHead(PacketType.STOP_READ, None)),
    ],
)
def test_header_examples_encode_and_decode(hex_bytes: str, head: PacketHead) -> None:
    data = bytes.fromhex(hex_bytes)
    assert encode_head(head) == data
    assert decode_head(data) == (head, len(data))


def test_decode_head_waits_for_whole_head() -> None:
    data = bytes.fromhex("0b0000000000000001ff")
    for cut in range(len(data) - 1):
        assert decode_head(data[:cut]) is None


heads = st.builds(
    PacketHead,
    st.sampled_from(list(PacketType)),
    st.none() | st.integers(0, INFINITE),
    st.integers(0, INFINITE),
).map(lambda h: PacketHead(h.type, h.stream_id, h.value if h.type in (PacketType.CREDIT, PacketType.WRITE) else 0))


@given(heads, st.integers(0, 3), st.integers(0, 3), st.integers(0, 3))
def test_any_width_decodes_and_encoding_is_minimal(head: PacketHead, id_pad: int, value_pad: int, noise: int) -> None:
    has_value = head.type in (PacketType.CREDIT, PacketType.WRITE)
    sid = head.stream_id
    idw = max(width_code(sid), id_pad) if sid is not None else noise
    vw = max(width_code(head.value), value_pad) if has_value else noise
    wide = bytes([head.type << 5 | (sid is None) << 4 | idw << 2 | vw])
    if sid is not None:
        wide += sid.to_bytes(1 << idw, "big")
    if has_value:
        wide += head.value.to_bytes(1 << vw, "big")
    assert decode_head(wide) == (head, len(wide))
    minimal = encode_head(head)
    assert decode_head(minimal) == (head, len(minimal))
    assert len(minimal) <= len(wide)
    assert len(minimal) == 1 + (0 if sid is None else 1 << width_code(sid)) + (
        1 << width_code(head.value) if has_value else 0
    )


# -------------------------------------------------------- local rule checks


def test_open_stream_needs_global_credit_and_gets_one_per_credit() -> None:
    a = Endpoint(True)
    with pytest.raises(UsageError):
        a.open_stream()
    b = Endpoint(False)
    b.give_global_credit(2)
    a.receive_data(b.data_to_send())
    assert drain(a) == [CreditReceived(None, 2)]
    assert [a.open_stream(), a.open_stream()] == [0, 2]
    with pytest.raises(UsageError):
        a.open_stream()
    b.receive_data(a.data_to_send())
    assert drain(b) == [StreamOpened(0), StreamOpened(2)]


def test_local_misuse_raises_usage_error_and_changes_nothing() -> None:
    a, b = pair()
    sid = a.open_stream()
    pump(a, b)
    before = a.summary()
    misuse = [
        lambda: a.write(sid, b"x"),  # no credit
        lambda: a.open_stream(1),  # wrong parity
        lambda: a.open_stream(sid),  # active
        lambda: a.write(99, b""),  # unknown
    ]
    for call in misuse:
        with pytest.raises(UsageError):
            call()
    assert a.summary() == before
    assert a.data_to_send() == b""
    a.stop_read(sid)
    with pytest.raises(UsageError):
        a.give_credit(sid, 1)
    with pytest.raises(UsageError):
        a.stop_read(sid)
    a.close(sid)
    with pytest.raises(UsageError):
        a.close(sid)
    with pytest.raises(UsageError):
        a.write(sid, b"")
    a.data_to_send()
    with pytest.raises(UsageError):
        a.ping(sid)
    a.close_global()
    with pytest.raises(UsageError):
        a.open_stream()
    a.stop_read_global()
    with pytest.raises(UsageError):
        a.give_global_credit(1)
    with pytest.raises(UsageError):
        a.ping()


def test_local_credit_overflow_and_infinite_rules() -> None:
    a, b = pair()
    sid = a.open_stream()
    a.give_credit(sid, INFINITE - 1)
    with pytest.raises(UsageError):
        a.give_credit(sid, 2)
    a.give_credit(sid, 1)
    assert a.stream(sid).recv_credit == INFINITE
    a.give_credit(sid, 0)
    with pytest.raises(UsageError):
        a.give_credit(sid, 5)
    pump(a, b)
    assert b.stream(sid).send_credit == INFINITE
    b.write(sid, b"z" * 100_000)
    pump(a, b)
    assert b.stream(sid).send_credit == INFINITE
    assert b"".join(e.data for e in drain(a) if isinstance(e, DataReceived)) == b"z" * 100_000


def test_termination_closes_the_endpoint_for_good() -> None:
    a, _ = pair()
    with pytest.raises(ConnectionTerminated) as info:
        a.receive_data(b"\xe0")
    assert "undefined-packet-type" in str(info.value)
    assert a.closed
    for call in (lambda: a.receive_data(b"\x70"), a.open_stream, lambda: a.give_global_credit(1)):
        with pytest.raises(ConnectionTerminated):
            call()
    assert a.data_to_send() == b""


# --------------------------------------------------- handshakes and reuse


def test_full_close_handshake_frees_ids_on_both_sides() -> None:
    a, b = pair()
    sid = a.open_stream()
    pump(a, b)
    a.close(sid)
    pump(a, b)
    # a's Close was answered by b's StopRead; b must still close its half.
    assert a.is_active(sid) and b.is_active(sid)
    assert CloseReceived(sid) in drain(b)
    with pytest.raises(UsageError):
        a.open_stream(sid)
    b.close(sid)
    pump(a, b)
    assert not a.is_active(sid) and not b.is_active(sid)
    assert StreamEnded(sid) in drain(a)
    assert StreamEnded(sid) in drain(b)
    assert a.open_stream() == sid
    pump(a, b)
    assert b.is_active(sid)
    assert b.stream(sid).summary()["received_close"] is False


def test_stop_read_first_handshake() -> None:
    a, b = pair()
    sid = b.open_stream()
    pump(a, b)
    a.stop_read(sid)
    pump(a, b)
    # b answered with Close on its own; a still owes its Close.
    assert b.stream(sid).sent_close and b.stream(sid).received_stop_read
    a.close(sid)
    pump(a, b)
    assert a.stream_ids == [] and b.stream_ids == []


def test_close_waits_for_queued_data() -> None:
    a, _, sid = credited_stream(50_000)
    a.write(sid, b"d" * 50_000)
    a.close(sid)
    out = packets(a.data_to_send())
    assert [h.type for h, _ in out][-1] is PacketType.CLOSE
    assert sum(h.value for h, _ in out if h.type is PacketType.WRITE) == 50_000


def test_peer_stop_read_drops_unsent_data() -> None:
    a, b, sid = credited_stream(100)
    a.write(sid, b"q" * 100)
    b.stop_read(sid)
    a.receive_data(b.data_to_send())
    out = packets(a.data_to_send())
    assert [(h.type, h.stream_id) for h, _ in out] == [(PacketType.CLOSE, sid)]
    assert a.stream(sid).queued == 0


def test_global_close_handshake_keeps_streams() -> None:
    a, b = pair()
    sid = a.open_stream()
    pump(a, b)
    a.close_global()
    pump(a, b)
    assert b.glob.sent_stop_read and b.glob.received_close
    with pytest.raises(UsageError):
        a.open_stream()
    b.give_credit(sid, 3)
    pump(a, b)
    a.write(sid, b"abc")
    pump(a, b)
    assert DataReceived(sid, b"abc") in drain(b)


# ------------------------------------------------------ fairness, packets


def test_writes_are_cut_to_max_packet_size() -> None:
    a, b = pair(max_packet_size=1000)
    sid = a.open_stream()
    b.receive_data(a.data_to_send())
    b.give_credit(sid, 0)
    a.receive_data(b.data_to_send())
    a.write(sid, bytes(10_000))
    out = packets(a.data_to_send())
    assert all(len(raw) <= 1000 for _, raw in out)
    assert sum(h.value for h, _ in out) == 10_000


def test_round_robin_interleaves_streams() -> None:
    a, b = pair()
    ids = [a.open_stream() for _ in range(3)]
    pump(a, b)
    for sid in ids:
        b.give_credit(sid, 0)
    pump(a, b)
    for sid in ids:
        a.write(sid, bytes(100_000))
    order = [h.stream_id for h, _ in packets(a.data_to_send()) if h.type is PacketType.WRITE]
    assert order[:9] == ids * 3


def test_ping_answered_within_bounded_packets_during_bulk_write() -> None:
    """b bulk-writes 8 MiB on one stream while a pings on another; a sees the pong within a few packets."""
    limit = 32 * 1024
    a, b = pair()
    bulk, quiet = b.open_stream(), b.open_stream()
    pump(a, b)
    a.give_credit(bulk, 0)
    b.receive_data(a.data_to_send())
    b.write(bulk, bytes(8 << 20))
    in_flight = b.data_to_send(limit)  # b already has bulk data on the wire
    a.ping(quiet)
    b.receive_data(a.data_to_send())
    packets_before_pong = 0
    wire = in_flight + b.data_to_send(limit)
    a.receive_data(wire)
    for head, _ in packets(wire):
        if head.type is PacketType.PONG:
            break
        packets_before_pong += 1
    else:
        pytest.fail("no pong in the next batch")
    assert PongReceived(quiet) in drain(a)
    # One batch already on the wire (limit bytes, plus one packet) and nothing more.
    assert packets_before_pong <= limit // (16 * 1024) + 1
    assert b.stream(bulk).queued > 7 << 20


# ------------------------------------------------------------ credit rule


@pytest.mark.parametrize(
    ("window", "held", "outstanding", "grant"),
    [
        (100, 0, 100, 0),  # full credit out: nothing to give
        (100, 0, 60, 0),  # 40 free < 60 outstanding: wait
        (100, 0, 50, 50),  # 50 free >= 50 outstanding: give
        (100, 10, 30, 60),
        (100, 0, 0, 100),
        (100, 100, 0, 0),  # all held by the reader: at least one needed
        (100, 99, 0, 1),
        (100, 0, INFINITE, 0),
    ],
)
def test_appendix_b_restore_rule(window: int, held: int, outstanding: int, grant: int) -> None:
    assert restore_amount(window, held, outstanding) == grant


# ------------------------------------------------------------- chunking


def _session_bytes(seed: list[tuple[int, int]]) -> bytes:
    """Everything a responder sends in a scripted legal session, plus a trailing breach-free ping."""
    a, b = pair(streams=4)
    ids = [b.open_stream() for _ in range(3)]
    pump(a, b)
    for sid in ids:
        a.give_credit(sid, 5000)
    pump(a, b)
    wire = bytearray()
    for which, size in seed:
        sid = ids[which % 3]
        if b.stream(sid).close_pending or b.stream(sid).sent_close:
            continue
        op = size % 5
        if op == 0:
            b.ping(sid)
        elif op == 1:
            b.close(sid)
        else:
            b.write(sid, bytes([size % 251]) * min(size, b.stream(sid).send_credit))
        wire += b.data_to_send(limit=600)
    wire += b.data_to_send()
    return bytes(wire)


def _outcome(data: bytes, cuts: list[int]) -> tuple[object, ...]:
    a, b = pair(streams=4)
    ids = [b.open_stream() for _ in range(3)]
    pump(a, b)
    for sid in ids:
        a.give_credit(sid, 5000)
    pump(a, b)
    drain(a)
    received: dict[int, bytearray] = {}
    others = []
    rule = None
    pieces = [data[i:j] for i, j in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    try:
        for piece in pieces:
            a.receive_data(piece)
    except ConnectionTerminated as exc:
        rule = exc.rule
    for event in drain(a):
        if isinstance(event, DataReceived):
            received.setdefault(event.stream_id, bytearray()).extend(event.data)
        else:
            others.append(event)
    return rule, {k: bytes(v) for k, v in received.items()}, others, a.summary(), a.data_to_send()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3000)), max_size=12),
    st.lists(st.integers(0, 20_000), max_size=30),
    st.binary(max_size=6),
)
def test_random_chunking_gives_identical_results(seed: list[tuple[int, int]], cuts: list[int], tail: bytes) -> None:
    data = _session_bytes(seed) + tail
    cut_points = sorted({c for c in cuts if 0 < c < len(data)})
    assert _outcome(data, cut_points) == _outcome(data, [])
    if len(data) < 400:
        assert _outcome(data, list(range(1, len(data)))) == _outcome(data, [])


# ------------------------------------------------------------- bad input


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 50))
def test_garbage_only_terminates_and_never_hoards(data: bytes, step: int) -> None:
    a, _, _ = credited_stream(100, by_b=True)
    try:
        for i in range(0, len(data), step):
            a.receive_data(data[i : i + step])
            assert a.buffered_bytes <= 17 + len(a.data_to_send())
    except ConnectionTerminated as exc:
        assert exc.rule.value in str(exc)
        assert a.closed


def test_long_write_streams_through_without_buffering() -> None:
    a, _, sid = credited_stream(0, by_b=True)
    drain(a)
    a.receive_data(encode_head(PacketHead(PacketType.WRITE, sid, 1 << 40)))
    for _ in range(64):
        a.receive_data(bytes(16384))
        assert a.buffered_bytes == 0
    assert sum(len(e.data) for e in drain(a) if isinstance(e, DataReceived)) == 64 * 16384
