"""Write specs/vectors/bymux.json from the hand-written case table below.

Run: `.venv/bin/python specs/vectors/make_bymux_vectors.py`. Packet bytes are built
here from the decided bit order (type << 5 | global << 4 | id width << 2 |
value width), independently of aeron_compat.bymux.codec, and every expected
outcome is typed by hand; nothing is computed by the implementation under test.

A case: the endpoint's role and config, a `script` of prior steps (bytes
received, or local calls) whose output is discarded, then `input` bytes, and
`expect`: either `terminated` (the rule) or the `reply` bytes sent, a subset
of the endpoint's state summary, the set of `active` stream ids and the
`events` reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CREDIT, WRITE, PING, PONG, CLOSE, STOP_READ = range(6)
INF = (1 << 64) - 1
OUT = Path(__file__).resolve().parent / "bymux.json"


def head(ptype: int, glob: bool, idw: int = 0, vw: int = 0) -> str:
    """One header byte as hex."""
    return f"{ptype << 5 | int(glob) << 4 | idw << 2 | vw:02x}"


def num(value: int, width: int) -> str:
    """A big-endian integer of `width` bytes as hex."""
    return value.to_bytes(width, "big").hex()


def s(ptype: int, sid: int) -> str:
    """A stream packet without a value (Ping, Pong, Close, StopRead), 1-byte id."""
    return head(ptype, False) + num(sid, 1)


def credit(sid: int, amount: int, vw: int = 0) -> str:
    """A stream Credit packet, 1-byte id, amount of width 2**vw."""
    return head(CREDIT, False, 0, vw) + num(sid, 1) + num(amount, 1 << vw)


def gcredit(amount: int, vw: int = 0) -> str:
    """A global Credit packet."""
    return head(CREDIT, True, 0, vw) + num(amount, 1 << vw)


def create(sid: int, vw: int = 0) -> str:
    """A global Write creating stream `sid`."""
    return head(WRITE, True, 0, vw) + num(sid, 1 << vw)


def write(sid: int, data: bytes) -> str:
    """A stream Write packet, 1-byte id and length."""
    return head(WRITE, False) + num(sid, 1) + num(len(data), 1) + data.hex()


def g(ptype: int) -> str:
    """A global packet without a value."""
    return head(ptype, True)


# The usual prior state: we are the initiator, gave one global credit, the
# peer created stream 1 and we gave it 10 bytes of credit.
PEER_STREAM: list[dict[str, Any]] = [
    {"call": "give_global_credit", "args": [1]},
    {"receive": create(1)},
    {"call": "give_credit", "args": [1, 10]},
]
# We created stream 0 after the peer gave us one global credit.
OWN_STREAM: list[dict[str, Any]] = [{"receive": gcredit(1)}, {"call": "open_stream"}]
# Stream 1 went through the whole Close/StopRead handshake.
ENDED_1: list[dict[str, Any]] = [
    {"call": "give_global_credit", "args": [2]},
    {"receive": create(1)},
    {"receive": s(CLOSE, 1)},
    {"receive": s(STOP_READ, 1)},
]


def term(rule: str) -> dict[str, Any]:
    """Expect termination by `rule`."""
    return {"terminated": rule}


def ok(reply: str = "", **rest: Any) -> dict[str, Any]:
    """Expect acceptance with `reply` bytes and other checks."""
    return {"reply": reply, **rest}


def stream_state(**fields: Any) -> dict[str, Any]:
    """Expected subset of one stream's summary."""
    return fields


CASES: list[tuple[str, str, list[dict[str, Any]], str, dict[str, Any]]] = [
    # name, description, script, input, expect
    ("global_credit_1", "10 01 gives one global credit", [], "1001", ok(state={"global": {"send_credit": 1}})),
    (
        "global_credit_wide",
        "an 8-byte amount of 1 is accepted",
        [],
        gcredit(1, 3),
        ok(state={"global": {"send_credit": 1}}),
    ),
    (
        "global_credit_zero_infinite",
        "global credit 0 means infinite",
        [],
        gcredit(0),
        ok(state={"global": {"send_credit": INF}}),
    ),
    (
        "global_credit_sum_infinite",
        "global credits summing to 2^64-1 are infinite",
        [{"receive": gcredit(INF - 3, 3)}],
        gcredit(3),
        ok(state={"global": {"send_credit": INF}}),
    ),
    (
        "global_credit_overflow",
        "global credits summing past 2^64-1",
        [{"receive": gcredit(INF - 1, 3)}],
        gcredit(2),
        term("global-credit-overflow"),
    ),
    (
        "global_credit_on_infinite",
        "non-zero global credit on infinite",
        [{"receive": gcredit(0)}],
        gcredit(1),
        term("global-credit-on-infinite"),
    ),
    (
        "global_credit_zero_on_infinite",
        "zero global credit on infinite is ignored",
        [{"receive": gcredit(0)}],
        gcredit(0),
        ok(state={"global": {"send_credit": INF}}),
    ),
    (
        "create_stream_1",
        "30 01 creates stream 1 for one global credit",
        [{"call": "give_global_credit", "args": [1]}],
        create(1),
        ok(active=[1], state={"global": {"recv_credit": 0}}, events=[{"event": "StreamOpened", "stream_id": 1}]),
    ),
    (
        "create_stream_0_responder",
        "30 00: the initiator creates stream 0",
        [{"call": "give_global_credit", "args": [1]}],
        "3000",
        ok(active=[0]),
        "responder",
    ),
    (
        "create_wide_id",
        "a created id of width 8 is accepted",
        [{"call": "give_global_credit", "args": [1]}],
        create(7, 3),
        ok(active=[7]),
    ),
    (
        "create_infinite_global_credit",
        "infinite global credit creates many",
        [{"call": "give_global_credit", "args": [0]}],
        create(1) + create(3) + create(5),
        ok(active=[1, 3, 5], state={"global": {"recv_credit": INF}}),
    ),
    (
        "create_without_global_credit",
        "creation needs global credit",
        [],
        create(1),
        term("create-without-global-credit"),
    ),
    (
        "create_beyond_global_credit",
        "two creations on one global credit",
        [{"call": "give_global_credit", "args": [1]}],
        create(1) + create(3),
        term("create-without-global-credit"),
    ),
    (
        "create_wrong_parity",
        "the reactive peer may not create even ids",
        [{"call": "give_global_credit", "args": [1]}],
        create(2),
        term("create-wrong-parity"),
    ),
    (
        "create_wrong_parity_responder",
        "the proactive peer may not create odd ids",
        [{"call": "give_global_credit", "args": [1]}],
        create(1),
        term("create-wrong-parity"),
        "responder",
    ),
    (
        "create_active_id",
        "creating an active id",
        [*PEER_STREAM, {"call": "give_global_credit", "args": [1]}],
        create(1),
        term("create-active-id"),
    ),
    (
        "create_after_global_close",
        "no creation after the peer's global Close",
        [{"call": "give_global_credit", "args": [2]}, {"receive": g(CLOSE)}],
        create(1),
        term("create-after-global-close"),
    ),
    (
        "write_abc",
        "20 00 03 61 62 63 writes abc to stream 0",
        [{"call": "give_global_credit", "args": [1]}, {"receive": "3000"}, {"call": "give_credit", "args": [0, 3]}],
        "200003616263",
        ok(
            state={"streams": {"0": {"recv_credit": 0}}},
            events=[{"event": "DataReceived", "stream_id": 0, "data": "616263"}],
        ),
        "responder",
    ),
    (
        "write_wide_widths",
        "a Write with an 8-byte id and 2-byte length is accepted",
        PEER_STREAM,
        head(WRITE, False, 3, 1) + num(1, 8) + num(3, 2) + "616263",
        ok(
            state={"streams": {"1": {"recv_credit": 7}}},
            events=[{"event": "DataReceived", "stream_id": 1, "data": "616263"}],
        ),
    ),
    (
        "write_exact_credit",
        "writing exactly the credit",
        PEER_STREAM,
        write(1, b"0123456789"),
        ok(state={"streams": {"1": {"recv_credit": 0}}}),
    ),
    (
        "write_beyond_credit",
        "writing more than the credit",
        PEER_STREAM,
        write(1, b"01234") + write(1, b"567890"),
        term("write-beyond-credit"),
    ),
    (
        "write_without_credit",
        "writing to a stream with no credit",
        PEER_STREAM[:2],
        write(1, b"x"),
        term("write-beyond-credit"),
    ),
    (
        "write_empty",
        "an empty Write costs nothing",
        PEER_STREAM[:2],
        write(1, b""),
        ok(state={"streams": {"1": {"recv_credit": 0}}}, events=[]),
    ),
    (
        "write_infinite_credit",
        "credit 0 lets the peer write without limit",
        [*PEER_STREAM[:2], {"call": "give_credit", "args": [1, 0]}],
        write(1, b"a" * 200) + write(1, b"b" * 200),
        ok(state={"streams": {"1": {"recv_credit": INF}}}),
    ),
    (
        "write_initial_credit",
        "the creator starts with other_credit",
        PEER_STREAM[:2],
        write(1, b"abcde"),
        ok(state={"streams": {"1": {"recv_credit": 0}}}),
        "initiator",
        {"other_credit": 5},
    ),
    (
        "write_beyond_initial_credit",
        "the creator's initial credit is a limit",
        PEER_STREAM[:2],
        write(1, b"abcdef"),
        term("write-beyond-credit"),
        "initiator",
        {"other_credit": 5},
    ),
    ("write_after_close", "no Write after Close", PEER_STREAM, s(CLOSE, 1) + write(1, b"x"), term("write-after-close")),
    (
        "write_after_own_stop_read",
        "Writes after our StopRead are credit-checked but dropped",
        [*PEER_STREAM, {"call": "stop_read", "args": [1]}],
        write(1, b"ab"),
        ok(state={"streams": {"1": {"recv_credit": 8}}}, events=[]),
    ),
    (
        "credit_stream",
        "Credit adds to our sending credit",
        OWN_STREAM,
        credit(0, 5),
        ok(
            state={"streams": {"0": {"send_credit": 5}}},
            events=[{"event": "CreditReceived", "stream_id": 0, "amount": 5}],
        ),
    ),
    (
        "credit_zero_infinite",
        "Credit 0 makes credit infinite",
        OWN_STREAM,
        credit(0, 0),
        ok(state={"streams": {"0": {"send_credit": INF}}}),
    ),
    (
        "credit_sum_infinite",
        "credits summing to exactly 2^64-1 are infinite",
        OWN_STREAM,
        credit(0, INF - 1, 3) + credit(0, 1),
        ok(state={"streams": {"0": {"send_credit": INF}}}),
    ),
    (
        "credit_max_finite",
        "2^64-2 is the largest finite credit",
        OWN_STREAM,
        credit(0, INF - 1, 3),
        ok(state={"streams": {"0": {"send_credit": INF - 1}}}),
    ),
    (
        "credit_overflow",
        "credits summing past 2^64-1",
        OWN_STREAM,
        credit(0, INF - 1, 3) + credit(0, 2),
        term("credit-overflow"),
    ),
    (
        "credit_zero_on_infinite",
        "zero credit on infinite credit is ignored",
        OWN_STREAM,
        credit(0, 0) + credit(0, 0),
        ok(state={"streams": {"0": {"send_credit": INF}}}),
    ),
    (
        "credit_on_infinite",
        "non-zero credit on infinite credit",
        OWN_STREAM,
        credit(0, 0) + credit(0, 1),
        term("credit-on-infinite"),
    ),
    (
        "credit_after_stop_read",
        "no Credit after StopRead",
        PEER_STREAM,
        s(STOP_READ, 1) + credit(1, 1),
        term("credit-after-stop-read"),
    ),
    (
        "credit_after_close",
        "Credit after the peer's Close is legal",
        PEER_STREAM,
        s(CLOSE, 1) + credit(1, 4),
        ok(reply=s(STOP_READ, 1), state={"streams": {"1": {"send_credit": 4, "received_close": True}}}),
    ),
    ("unknown_stream_credit", "Credit for an inactive id", PEER_STREAM, credit(3, 1), term("unknown-stream")),
    ("unknown_stream_write", "Write for an inactive id", PEER_STREAM, write(3, b"x"), term("unknown-stream")),
    ("unknown_stream_ping", "Ping for an inactive id", PEER_STREAM, s(PING, 3), term("unknown-stream")),
    ("unknown_stream_pong", "Pong for an inactive id", PEER_STREAM, s(PONG, 3), term("unknown-stream")),
    ("unknown_stream_close", "Close for an inactive id", PEER_STREAM, s(CLOSE, 3), term("unknown-stream")),
    ("unknown_stream_stop_read", "StopRead for an inactive id", PEER_STREAM, s(STOP_READ, 3), term("unknown-stream")),
    ("undefined_type_6", "packet type 110 is undefined", [], "c0", term("undefined-packet-type")),
    ("undefined_type_7", "packet type 111 is undefined", PEER_STREAM, "e1", term("undefined-packet-type")),
    ("ping_stream", "a Ping is answered with a Pong", PEER_STREAM, s(PING, 1), ok(reply=s(PONG, 1))),
    (
        "ping_wide_id",
        "a Ping with a 4-byte id is answered minimally",
        PEER_STREAM,
        head(PING, False, 2) + num(1, 4),
        ok(reply=s(PONG, 1)),
    ),
    (
        "pong_unsolicited",
        "an unsolicited Pong is accepted",
        PEER_STREAM,
        s(PONG, 1),
        ok(events=[{"event": "PongReceived", "stream_id": 1}]),
    ),
    (
        "ping_after_close",
        "a Ping after only Close is answered",
        PEER_STREAM,
        s(CLOSE, 1) + s(PING, 1),
        ok(reply=s(STOP_READ, 1) + s(PONG, 1)),
    ),
    (
        "ping_not_answered_after_own_end",
        "no Pong once we sent Close and StopRead",
        [*PEER_STREAM, {"call": "close", "args": [1]}, {"call": "stop_read", "args": [1]}],
        s(PING, 1),
        ok(reply="", active=[1]),
    ),
    (
        "ping_after_end",
        "a Ping after Close and StopRead finds an ended stream",
        PEER_STREAM,
        s(CLOSE, 1) + s(STOP_READ, 1) + s(PING, 1),
        term("unknown-stream"),
    ),
    (
        "close_answered",
        "Close is answered with StopRead",
        PEER_STREAM,
        s(CLOSE, 1),
        ok(reply=s(STOP_READ, 1), events=[{"event": "CloseReceived", "stream_id": 1}]),
    ),
    (
        "close_after_own_stop_read",
        "Close after our StopRead needs no answer",
        [*PEER_STREAM, {"call": "stop_read", "args": [1]}],
        s(CLOSE, 1),
        ok(reply="", active=[1]),
    ),
    ("close_after_close", "a second Close", PEER_STREAM, s(CLOSE, 1) + s(CLOSE, 1), term("close-after-close")),
    (
        "stop_read_answered",
        "StopRead is answered with Close",
        PEER_STREAM,
        s(STOP_READ, 1),
        ok(reply=s(CLOSE, 1), events=[{"event": "StopReadReceived", "stream_id": 1}]),
    ),
    (
        "stop_read_after_own_close",
        "StopRead after our Close needs no answer; the stream ends",
        [*PEER_STREAM, {"call": "close", "args": [1]}, {"receive": s(CLOSE, 1)}],
        s(STOP_READ, 1),
        ok(
            reply="",
            active=[],
            events=[{"event": "StopReadReceived", "stream_id": 1}, {"event": "StreamEnded", "stream_id": 1}],
        ),
    ),
    (
        "stop_read_after_stop_read",
        "a second StopRead",
        PEER_STREAM,
        s(STOP_READ, 1) + s(STOP_READ, 1),
        term("stop-read-after-stop-read"),
    ),
    (
        "stop_read_drops_queued_data",
        "StopRead discards our unsent data and is answered with Close",
        [*OWN_STREAM, {"receive": credit(0, 8)}, {"call": "write", "args": [0, "hex:6869"]}],
        s(STOP_READ, 0),
        ok(reply=s(CLOSE, 0), active=[0]),
    ),
    (
        "handshake_ends_stream",
        "Close then StopRead end the stream",
        PEER_STREAM,
        s(CLOSE, 1) + s(STOP_READ, 1),
        ok(reply=s(STOP_READ, 1) + s(CLOSE, 1), active=[]),
    ),
    (
        "id_reuse_after_handshake",
        "an ended id may be created again",
        ENDED_1,
        create(1),
        ok(active=[1], state={"streams": {"1": {"sent_close": False, "received_close": False}}}),
    ),
    (
        "id_reuse_too_early",
        "an id is active until both sides sent and received both",
        [{"call": "give_global_credit", "args": [2]}, {"receive": create(1)}, {"receive": s(CLOSE, 1)}],
        create(1),
        term("create-active-id"),
    ),
    ("global_ping", "a global Ping is answered", [], g(PING), ok(reply=g(PONG))),
    (
        "global_ping_ignored_bits",
        "the id width bits of a global packet are ignored",
        [],
        head(PING, True, 3, 3),
        ok(reply=g(PONG)),
    ),
    (
        "global_pong_unsolicited",
        "an unsolicited global Pong is accepted",
        [],
        g(PONG),
        ok(events=[{"event": "PongReceived", "stream_id": None}]),
    ),
    (
        "global_close_answered",
        "global Close is answered with global StopRead",
        [],
        g(CLOSE),
        ok(reply=g(STOP_READ), state={"global": {"received_close": True, "sent_stop_read": True}}),
    ),
    (
        "global_stop_read_answered",
        "global StopRead is answered with global Close",
        [],
        g(STOP_READ),
        ok(reply=g(CLOSE), state={"global": {"received_stop_read": True, "sent_close": True}}),
    ),
    (
        "global_close_after_global_close",
        "a second global Close",
        [],
        g(CLOSE) + g(CLOSE),
        term("global-close-after-global-close"),
    ),
    (
        "global_stop_read_after_global_stop_read",
        "a second global StopRead",
        [],
        g(STOP_READ) + g(STOP_READ),
        term("global-stop-read-after-global-stop-read"),
    ),
    (
        "global_credit_after_global_stop_read",
        "no global Credit after global StopRead",
        [],
        g(STOP_READ) + gcredit(1),
        term("global-credit-after-global-stop-read"),
    ),
    (
        "global_ping_after_close_only",
        "a global Ping after only global Close is answered",
        [],
        g(CLOSE) + g(PING),
        ok(reply=g(STOP_READ) + g(PONG)),
    ),
    (
        "global_ping_after_end",
        "no global Ping after global Close and StopRead",
        [],
        g(CLOSE) + g(STOP_READ) + g(PING),
        term("global-ping-after-end"),
    ),
    (
        "global_pong_after_end",
        "no global Pong after global Close and StopRead",
        [],
        g(STOP_READ) + g(CLOSE) + g(PONG),
        term("global-pong-after-end"),
    ),
    (
        "global_close_keeps_streams",
        "streams outlive the global handshake",
        PEER_STREAM,
        g(CLOSE) + g(STOP_READ) + write(1, b"hi"),
        ok(reply=g(STOP_READ) + g(CLOSE), active=[1]),
    ),
    (
        "termination_mid_input",
        "packets before the breach take effect, none after",
        PEER_STREAM,
        write(1, b"ok") + "c0" + write(1, b"no"),
        term("undefined-packet-type"),
    ),
]


def build() -> dict[str, Any]:
    """The JSON document."""
    vectors = []
    for row in CASES:
        name, description, script, data, expect = row[:5]
        role = row[5] if len(row) > 5 else "initiator"
        config = row[6] if len(row) > 6 else {}
        vectors.append(
            {
                "name": name,
                "description": description,
                "role": role,
                "config": config,
                "script": script,
                "input": data,
                "expect": expect,
            }
        )
    return {
        "schema": "bymux endpoint vectors v1",
        "spec": "bymux (stable), bit order per decision BYMUX-1",
        "notes": "script steps: {receive: hex} or {call: Endpoint method, args}; 'hex:' args are bytes. "
        "Output of the script is discarded. expect: terminated rule, or reply hex, state subset, active ids, events.",
        "vectors": vectors,
    }


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), indent=1) + "\n")
    print(f"wrote {len(CASES)} vectors to {OUT}")
