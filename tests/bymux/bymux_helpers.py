"""Shared helpers for the bymux tests: endpoint pairs, pumping, packet splitting."""

from __future__ import annotations

from aeron_compat.bymux import Endpoint, Event, PacketHead, PacketType
from aeron_compat.bymux.codec import decode_head


def pair(streams: int = 8, **kwargs: int) -> tuple[Endpoint, Endpoint]:
    """An initiator and a responder that gave each other `streams` global credit."""
    a = Endpoint(True, **kwargs)
    b = Endpoint(False, **kwargs)
    a.give_global_credit(streams)
    b.give_global_credit(streams)
    pump(a, b)
    drain(a)
    drain(b)
    return a, b


def pump(a: Endpoint, b: Endpoint) -> None:
    """Move bytes both ways until both sides are quiet."""
    while True:
        ab = a.data_to_send()
        ba = b.data_to_send()
        if not ab and not ba:
            return
        b.receive_data(ab)
        a.receive_data(ba)


def credited_stream(credit: int, *, by_b: bool = False) -> tuple[Endpoint, Endpoint, int]:
    """A fresh pair (a, b) and a stream opened by a (or b) to which the other side gave `credit`; both quiet."""
    a, b = pair()
    opener, reader = (b, a) if by_b else (a, b)
    sid = opener.open_stream()
    pump(a, b)
    reader.give_credit(sid, credit)
    pump(a, b)
    return a, b, sid


def drain(endpoint: Endpoint) -> list[Event]:
    """Every pending event."""
    events = []
    while (event := endpoint.next_event()) is not None:
        events.append(event)
    return events


def packets(data: bytes) -> list[tuple[PacketHead, bytes]]:
    """Split well-formed bytes into (head, whole packet bytes)."""
    out = []
    pos = 0
    while pos < len(data):
        parsed = decode_head(data, pos)
        assert parsed is not None, "truncated packet"
        head, end = parsed
        if head.type is PacketType.WRITE and not head.is_global:
            end += head.value
        out.append((head, data[pos:end]))
        pos = end
    return out
