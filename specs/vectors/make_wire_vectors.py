"""Regenerate specs/vectors/aqueduct-wire.json: the shared vectors, then ours.

Run: `python specs/vectors/make_wire_vectors.py` (rewrites the JSON beside it).

This script deliberately does not import `aqueduct`: the bytes come from a
tiny LEB128 writer and frame builders written here from the spec text, and
the core vectors also carry hex typed by hand, which is checked against the
builders. The codec under test is then held to these bytes. Vectors already
in the file that this script does not make (the shared set) are kept as
they are, in front.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "aqueduct-wire.json"
ORIGIN = "aqueduct-quic"  # marks our vectors; the shared ones have no origin field

U64 = (1 << 64) - 1
MAGIC = bytes([80, 95, 166, 96, 15, 64, 142])
VERSION_HEAD = bytes([239]) + MAGIC + b"AQUEDUCT"
assert VERSION_HEAD.hex() == "ef505fa6600f408e" "4151554544554354"  # by hand from the spec's list

EDGE = [0, 1, 127, 128, 16383, 16384, (1 << 32) - 1, 1 << 62, (1 << 63) - 1, 1 << 63, U64]


def leb(n: int) -> bytes:
    """Minimal LEB128 of 0..2^64-1 (low 7 bits first, high bit = more follows)."""
    assert 0 <= n <= U64
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def arr(b: bytes) -> bytes:
    return leb(len(b)) + b


def b_version(s: str) -> bytes:
    return VERSION_HEAD + arr(s.encode("ascii"))


def b_headers(pairs: list[tuple[bytes, bytes]]) -> bytes:
    return arr(b"".join(arr(k) + arr(v) for k, v in pairs))


def b_ranges(ints: list[int]) -> bytes:
    return arr(b"".join(leb(i) for i in ints))


def build(frame: dict[str, Any]) -> bytes:
    """The bytes of one frame given as vector JSON, straight from the spec's field lists."""
    t = frame["type"]
    if t == "Version":
        return b_version(frame["version"])
    if t == "ConnectionControl":
        return b"\x01" + b_headers([(k.encode("ascii"), bytes.fromhex(v)) for k, v in frame["headers"]])
    if t == "Message":
        att = b"".join(leb(a) for a in frame["attachments"])
        return b"\x03" + leb(frame["channel"]) + leb(frame["number"]) + arr(att) + arr(bytes.fromhex(frame["payload"]))
    single = {"ChannelControl": (2, "channel"), "SentUnreliable": (4, "count"), "FinishSender": (7, "reliable_count"),
              "ClosedChannelLost": (9, "channel")}
    if t in single:
        code, key = single[t]
        return bytes([code]) + leb(frame[key])
    ranged = {"AckReliable": 5, "AckNackUnreliable": 6, "CloseReceiver": 8}
    return bytes([ranged[t]]) + b_ranges(frame["ranges"])


VECTORS: list[dict[str, Any]] = []


def add(v: dict[str, Any]) -> None:
    assert all(v["name"] != w["name"] for w in VECTORS), v["name"]
    VECTORS.append(v)


def valid(name: str, desc: str, frames: list[dict[str, Any]], hand: str | None = None) -> None:
    data = b"".join(build(f) for f in frames)
    if hand is not None:
        assert data.hex() == hand.replace(" ", ""), (name, data.hex())
    add({"name": name, "description": desc, "kind": "frames", "hex": data.hex(), "valid": True, "frames": frames})


def invalid(name: str, desc: str, hexstr: str | bytes, kind: str = "frames") -> None:
    h = hexstr.hex() if isinstance(hexstr, bytes) else hexstr.replace(" ", "")
    add({"name": name, "description": desc, "kind": kind, "hex": h, "valid": False})


def F(t: str, **fields: Any) -> dict[str, Any]:
    return {"type": t, **fields}


def msg(channel: int, number: int, attachments: list[int] | None = None, payload: bytes = b"") -> dict[str, Any]:
    return F("Message", channel=channel, number=number, attachments=attachments or [], payload=payload.hex())


def label(n: int) -> str:
    names = {1 << 63: "2^63", U64: "2^64-1", (1 << 63) - 1: "2^63-1", 1 << 62: "2^62", (1 << 32) - 1: "2^32-1"}
    return names.get(n, str(n))


# ---- var len ints -------------------------------------------------------------------------------------------------

HAND_VARINTS = {  # value: hex worked out by hand, 7 bits at a time, low group first
    2: "02", 129: "8101", 255: "ff01", 256: "8002", 16383: "ff7f", 2097151: "ffff7f", 2097152: "80808001",
    (1 << 28): "8080808001", (1 << 35): "808080808001", (1 << 42): "80808080808001", (1 << 49): "8080808080808001",
    (1 << 56): "808080808080808001", (1 << 62): "808080808080808040", (1 << 63): "80808080808080808001",
    (1 << 63) + 1: "81808080808080808001", (1 << 32) - 1: "ffffffff0f", 1 << 32: "8080808010",
}
for value, hand in HAND_VARINTS.items():
    assert leb(value).hex() == hand, (value, leb(value).hex())
    add({"name": f"varint_{label(value)}_own", "description": f"minimal var len int of {value}", "kind": "varint",
         "hex": hand, "valid": True, "value": str(value)})
for length in range(2, 11):
    top = (1 << (7 * length)) - 1 if length < 10 else U64
    lowest = 1 << (7 * (length - 1))
    for value in (lowest, top):
        name = f"varint_{length}_bytes_{'min' if value == lowest else 'max'}"
        add({"name": name, "description": f"{value}: the {'smallest' if value == lowest else 'largest'} "
             f"value taking {length} bytes", "kind": "varint", "hex": leb(value).hex(), "valid": True,
             "value": str(value)})
        assert len(leb(value)) == length
for length in range(2, 11):  # non-minimal: a zero final group after a continuation, for every length
    invalid(f"varint_nonminimal_0_in_{length}_bytes", f"0 written in {length} bytes (trailing zero group)",
            "80" * (length - 1) + "00", "varint")
    invalid(f"varint_nonminimal_1_in_{length}_bytes", f"1 written in {length} bytes (trailing zero group)",
            "81" + "80" * (length - 2) + "00", "varint")
invalid("varint_nonminimal_2^63-1_in_10_bytes", "2^63-1 padded to 10 bytes with a zero tenth byte", "ff" * 9 + "00",
        "varint")
invalid("varint_65_bits", "tenth byte 0x02: bit 64 set", "80" * 9 + "02", "varint")
invalid("varint_70_bits", "tenth byte 0x7f: bits 63..69 set", "ff" * 9 + "7f", "varint")
invalid("varint_11_bytes", "eleven bytes: the tenth has its continuation bit set", "80" * 10 + "01", "varint")
invalid("varint_11_bytes_all_ones", "eleven bytes of 0xff...01", "ff" * 10 + "01", "varint")
invalid("varint_tenth_byte_0x81", "tenth byte 0x81 (bit 63 and a continuation)", "80" * 9 + "81", "varint")
invalid("varint_empty", "no bytes at all", "", "varint")
for cut in ("80", "ff", "8080", "ff" * 9, "80" * 9):
    invalid(f"varint_truncated_{cut[:4]}x{len(cut) // 2}", f"continuation bit set on the last of {len(cut) // 2} bytes",
            cut, "varint")
invalid("varint_trailing_byte", "a var len int followed by a stray byte", "0000", "varint")

# ---- channel IDs: all 8 spaces ------------------------------------------------------------------------------------

for space in range(8):
    to = "to_client" if space & 1 else "to_server"
    minter = "server" if space & 2 else "client"
    oneshot = bool(space & 4)
    for index in (0, 1, 15, 16, (1 << 61) - 1):
        if space == 0 and index in (0, 1):
            continue  # shared vectors chanid_0 and chanid_8
        if space in (1, 3, 5) and index == 0:
            continue  # shared vectors chanid_1, chanid_3, chanid_5
        value = index << 3 | space
        add({"name": f"chanid_space{space}_idx{label(index) if index < (1 << 61) - 1 else '2^61-1'}",
             "description": f"{to}, minted by {minter}, {'oneshot' if oneshot else 'multishot'}, index {index}",
             "kind": "channel_id", "hex": leb(value).hex(), "valid": True, "value": str(value), "direction": to,
             "minted_by": minter, "oneshot": oneshot, "index": str(index)})
assert leb(((1 << 61) - 1) << 3).hex() == "f8" + "ff" * 8 + "01"  # by hand: low group 1111000, then all ones
invalid("chanid_nonminimal", "channel ID 3 written in two bytes", "8300", "channel_id")
invalid("chanid_65_bits", "a channel ID with bit 64 set", "ff" * 9 + "03", "channel_id")
invalid("chanid_truncated", "a channel ID cut after a continuation byte", "f8ff", "channel_id")

# ---- Version ------------------------------------------------------------------------------------------------------

VHEAD = "ef505fa6600f408e 4151554544554354"
valid("version_empty_string", "Version with an empty version string: decodes; the engine rejects the mismatch",
      [F("Version", version="")], VHEAD + "00")
valid("version_other", "Version 1.2.3: any ASCII version decodes; the engine rejects the mismatch",
      [F("Version", version="1.2.3")], VHEAD + "05 312e322e33")
valid("version_control_chars", "ASCII includes control bytes: version '\\x00\\x7f'",
      [F("Version", version="\x00\x7f")], VHEAD + "02 007f")
valid("version_200_chars", "a 200-byte version string (two-byte length c801)", [F("Version", version="v" * 200)],
      VHEAD + "c801" + "76" * 200)
for i in range(7):
    bad = bytearray(b_version("0.0.0-AFTER"))
    bad[1 + i] ^= 0x01
    invalid(f"version_bad_magic_byte_{i}", f"magic byte {i} off by one bit", bytes(bad))
invalid("version_bad_text_lowercase", "human text 'AQUEDUCt'", VHEAD[:-2] + "74" + "0b302e302e302d4146544552")
invalid("version_bad_text_first", "human text 'BQUEDUCT'", "ef505fa6600f408e 42515545445543540b302e302e302d4146544552")
invalid("version_non_ascii_0x80", "version string holding byte 0x80", VHEAD + "03 302e80")
invalid("version_non_ascii_utf8", "version string 'é' in UTF-8", VHEAD + "02 c3a9")
invalid("version_type_byte_only", "the Version type byte alone", "ef")
invalid("version_truncated_in_magic", "cut after three magic bytes", "ef505fa6")
invalid("version_truncated_in_text", "cut inside 'AQUEDUCT'", "ef505fa6600f408e 41515545")
invalid("version_truncated_before_length", "magic and text but no version length", VHEAD)
invalid("version_truncated_in_length", "version length cut inside its var len int", VHEAD + "80")
invalid("version_truncated_in_string", "declared 11 bytes, 5 present", VHEAD + "0b 302e302e30")
invalid("version_length_nonminimal", "version length 0 written as 8000", VHEAD + "8000")

# ---- ConnectionControl ----------------------------------------------------------------------------------------------

valid("cc_one_key_empty_value", "one header: key 'a', empty value", [F("ConnectionControl", headers=[["a", ""]])],
      "01 03 0161 00")
valid("cc_value_high_bytes", "value bytes 00 80 ff", [F("ConnectionControl", headers=[["k", "0080ff"]])],
      "01 06 016b 030080ff")
valid("cc_key_all_printable", "a key of every printable ASCII character",
      [F("ConnectionControl", headers=[["".join(map(chr, range(32, 127))), "01"]])])
valid("cc_key_control_chars", "ASCII control bytes in a key (NUL, DEL)",
      [F("ConnectionControl", headers=[["\x00\x7f", ""]])], "01 04 02007f 00")
valid("cc_value_200_bytes", "a 200-byte value: inner and outer lengths of two bytes",
      [F("ConnectionControl", headers=[["v", "ab" * 200]])], "01 cc01 0176 c801" + "ab" * 200)
valid("cc_repeated_keys", "the same key four times: a multimap keeps order and duplicates",
      [F("ConnectionControl", headers=[["x", f"{i:02x}"] for i in range(4)])])
valid("cc_100_headers", "100 headers (outer length beyond one byte)",
      [F("ConnectionControl", headers=[[f"h{i}", f"{i:02x}" * (i % 5)] for i in range(100)])])
valid("cc_long_key", "a 300-byte key", [F("ConnectionControl", headers=[["k" * 300, "00"]])])
invalid("cc_type_only", "ConnectionControl with no header data", "01")
invalid("cc_odd_one_item", "header data holding one byte array", "01 02 0161")
invalid("cc_odd_three_items", "header data holding three byte arrays", "01 06 0161 0162 0163")
invalid("cc_empty_key", "an empty key with an empty value", "01 02 00 00")
invalid("cc_empty_key_with_value", "an empty key with value 'v'", "01 03 00 0176")
invalid("cc_empty_key_second", "a good pair, then an empty key", "01 05 0161 00 00 00")
invalid("cc_key_0x80", "a key holding byte 0x80", "01 03 0180 00")
invalid("cc_key_0xff", "a key holding byte 0xff", "01 04 02 61ff 00")
invalid("cc_key_utf8", "a key 'é' in UTF-8", "01 04 02c3a9 00")
invalid("cc_item_past_outer", "an inner array declaring more bytes than the header data has", "01 02 0561")
invalid("cc_item_length_cut", "header data ending inside an inner length", "01 03 0161 80")
invalid("cc_outer_truncated", "header data declaring 5 bytes, 3 present", "01 05 016100")
invalid("cc_outer_length_cut", "the header data length cut inside its var len int", "01 80")
invalid("cc_outer_nonminimal", "header data length 0 written as 8000", "01 8000")
invalid("cc_inner_nonminimal", "an inner length 1 written as 8100", "01 04 810061 00")

# ---- single-varint frames: ChannelControl, SentUnreliable, FinishSender, ClosedChannelLost ------------------------

SINGLE = [("ChannelControl", 2, "channel"), ("SentUnreliable", 4, "count"), ("FinishSender", 7, "reliable_count"),
          ("ClosedChannelLost", 9, "channel")]
HAND_SINGLE = {0: "00", 127: "7f", 128: "8001", 1 << 63: "80808080808080808001", U64: "ffffffffffffffffff01"}
for t, code, key in SINGLE:
    for value in EDGE:
        valid(f"{t}_{label(value)}", f"{t} with {key} {value}", [F(t, **{key: value})],
              f"{code:02x}" + HAND_SINGLE[value] if value in HAND_SINGLE else None)
    invalid(f"{t}_truncated_empty", f"{t} type byte with no {key}", f"{code:02x}")
    invalid(f"{t}_truncated_in_varint", f"{t} {key} cut after a continuation byte", f"{code:02x} ff ff")
    invalid(f"{t}_nonminimal", f"{t} {key} 5 written as 8500", f"{code:02x} 8500")
    invalid(f"{t}_65_bits", f"{t} {key} of 65 bits", f"{code:02x}" + "ff" * 9 + "03")
for space in range(8):
    valid(f"ChannelControl_space{space}", f"ChannelControl for index 3 of space {space}",
          [F("ChannelControl", channel=3 << 3 | space)], f"02 {3 << 3 | space:02x}")

# ---- Message --------------------------------------------------------------------------------------------------------

valid("msg_all_zero", "entrypoint, number 0, no attachments, empty payload", [msg(0, 0)], "03 00 00 00 00")
for value in EDGE[2:]:
    valid(f"msg_channel_{label(value)}", f"Message on channel {value}", [msg(value, 1, payload=b"x")])
    valid(f"msg_number_{label(value)}", f"Message number {value}", [msg(8, value, payload=b"x")])
valid("msg_max_everything", "channel, number and attachment all 2^64-1", [msg(U64, U64, [U64], b"\xff")],
      "03 ffffffffffffffffff01 ffffffffffffffffff01 0a ffffffffffffffffff01 01 ff")
valid("msg_one_attachment", "one attached channel (server-minted, to-client, index 0)", [msg(0, 0, [3])],
      "03 00 00 0103 00")
valid("msg_attachments_all_spaces", "one attachment from each of the 8 spaces, index 1",
      [msg(8, 2, [8 + s for s in range(8)], b"hi")], "03 08 02 08 08090a0b0c0d0e0f 02 6869")
valid("msg_attachments_large_ids", "attachments of 1, 2, 9 and 10 bytes",
      [msg(1, 0, [5, 1 << 7, (1 << 63) - 1, 1 << 63])])
valid("msg_60_attachments", "60 attachments: the attachment array length takes two bytes",
      [msg(0, 7, [(i << 3) | 5 for i in range(60)])])
valid("msg_payload_127", "payload of 127 bytes (longest with a one-byte length)", [msg(0, 0, payload=bytes(127))])
valid("msg_payload_128", "payload of 128 bytes (length 8001)", [msg(0, 0, payload=bytes(range(128)))],
      "03 00 00 00 8001" + bytes(range(128)).hex())
valid("msg_payload_16384", "payload of 16 KiB (length 808001)", [msg(2, 9, payload=bytes([0xA5]) * 16384)],
      "03 02 09 00 808001" + "a5" * 16384)
valid("msg_payload_all_bytes", "payload holding every byte value", [msg(4, 4, [], bytes(range(256)))])
valid("msg_payload_looks_like_frames", "a payload that is itself a Version frame stays opaque",
      [msg(0, 0, payload=b_version("0.0.0-AFTER"))])
invalid("msg_type_only", "Message type byte only", "03")
invalid("msg_cut_in_channel", "Message cut inside the channel ID", "03 80")
invalid("msg_cut_before_number", "Message cut before the number", "03 00")
invalid("msg_cut_in_number", "Message cut inside the number", "03 00 ff")
invalid("msg_cut_before_attachments", "Message cut before the attachments", "03 00 00")
invalid("msg_cut_in_attachments_length", "Message cut inside the attachments length", "03 00 00 80")
invalid("msg_cut_in_attachments", "attachments declare 2 bytes, 1 present", "03 00 00 02 01")
invalid("msg_cut_before_payload", "Message cut before the payload length", "03 00 00 00")
invalid("msg_cut_in_payload_length", "Message cut inside the payload length", "03 00 00 00 80")
invalid("msg_cut_in_payload", "payload declares 5 bytes, 2 present", "03 00 00 00 05 6865")
invalid("msg_cut_in_payload_with_attachments", "attachments [1], payload declares 3 bytes, none present",
        "03 00 00 0101 03")
invalid("msg_attachment_ends_in_id", "attachments array ends inside a channel ID", "03 00 00 01 80 00")
invalid("msg_attachment_ends_in_second_id", "the second attached ID is cut by the array end", "03 00 00 02 01 ff 00")
invalid("msg_attachment_nonminimal", "an attached ID 0 written as 8000", "03 00 00 02 8000 00")
invalid("msg_attachment_65_bits", "an attached ID of 65 bits", "03 00 00 0a" + "ff" * 9 + "02" + "00")
invalid("msg_channel_nonminimal", "channel ID 1 written as 8100", "03 8100 00 00 00")
invalid("msg_number_nonminimal", "number 127 written as ff00", "03 00 ff00 00 00")
invalid("msg_payload_length_nonminimal", "payload length 1 written as 8100", "03 00 00 00 8100 61")
invalid("msg_channel_65_bits", "channel ID of 65 bits", "03" + "80" * 9 + "02" + "00 00 00")
invalid("msg_hostile_payload_length", "payload declares 2^60 bytes and none follow", "03 00 00 00" + leb(1 << 60).hex())
invalid("msg_hostile_attachments_length", "attachments declare 2^62 bytes", "03 00 00" + leb(1 << 62).hex())

# ---- range frames: AckReliable, AckNackUnreliable, CloseReceiver ---------------------------------------------------

RANGED = [("AckReliable", 5), ("AckNackUnreliable", 6), ("CloseReceiver", 8)]
for t, code in RANGED:
    c = f"{code:02x}"
    valid(f"{t}_empty", f"{t} with no ranges", [F(t, ranges=[])], c + "00")
    valid(f"{t}_one", f"{t} [1]", [F(t, ranges=[1])], c + "0101")
    valid(f"{t}_leading_zero", f"{t} [0, 4]: the first run is negative", [F(t, ranges=[0, 4])], c + "02 0004")
    valid(f"{t}_leading_zero_many", f"{t} [0, 1, 1, 1]", [F(t, ranges=[0, 1, 1, 1])], c + "04 00010101")
    valid(f"{t}_big_runs", f"{t} [127, 128, 2^64-1]", [F(t, ranges=[127, 128, U64])],
          c + "0d 7f 8001 ffffffffffffffffff01")
    valid(f"{t}_zero_then_max", f"{t} [0, 2^64-1]", [F(t, ranges=[0, U64])], c + "0b 00 ffffffffffffffffff01")
    valid(f"{t}_100_runs", f"{t} with 100 alternating runs", [F(t, ranges=[(i * 37) % 200 + 1 for i in range(100)])])
    invalid(f"{t}_lone_zero", f"{t} [0]: a 0 with nothing after it", c + "01 00")
    invalid(f"{t}_zero_in_middle", f"{t} [1, 0, 1]", c + "03 010001")
    invalid(f"{t}_trailing_zero", f"{t} [1, 0]", c + "02 0100")
    invalid(f"{t}_two_zeros", f"{t} [0, 0]", c + "02 0000")
    invalid(f"{t}_zero_after_leading_zero", f"{t} [0, 0, 3]", c + "03 000003")
    invalid(f"{t}_ends_in_varint", f"{t} range data ends inside a var len int", c + "02 01 80")
    invalid(f"{t}_nonminimal_run", f"{t} run 2 written as 8200", c + "02 8200")
    invalid(f"{t}_run_65_bits", f"{t} run of 65 bits", c + "0a" + "ff" * 9 + "02")
    invalid(f"{t}_type_only", f"{t} type byte only", c)
    invalid(f"{t}_truncated", f"{t} range data declares 3 bytes, 1 present", c + "03 01")
    invalid(f"{t}_length_nonminimal", f"{t} range data length 0 written as 8000", c + "8000")

# ---- unknown frame types, empty buffers, trailing bytes --------------------------------------------------------------

for code in (0, 11, 12, 50, 100, 127, 128, 200, 237, 238, 240, 241, 254, 255):
    invalid(f"unknown_type_{code}", f"frame type byte {code} is not assigned", f"{code:02x}")
invalid("unknown_type_after_valid", "a valid SentUnreliable, then type byte 10", "0405 0a")
invalid("unknown_type_0_with_body", "type 0 followed by plausible bytes", "00 0000")
invalid("empty_buffer", "no bytes: a stream or datagram must hold at least one frame", "")
invalid("trailing_truncated_message", "a valid SentUnreliable, then a cut Message", "0405 03 00")
invalid("trailing_truncated_version", "a valid Version, then a cut Version", VHEAD + "0b302e302e302d4146544552 ef505f")
invalid("trailing_truncated_ack", "a valid FinishSender, then an AckReliable cut in its ranges", "07e807 05 02 01")
invalid("trailing_single_zero", "a valid Message then a lone 00 byte (unknown type 0)", "03 00 00 00 00 00")
invalid("trailing_partial_varint_frame", "ChannelControl then a ClosedChannelLost cut in its ID", "0203 09 ff")

# ---- several frames in one buffer ------------------------------------------------------------------------------------

AFTER = F("Version", version="0.0.0-AFTER")
valid("multi_control_stream_open", "connection control stream start: Version then ConnectionControl",
      [AFTER, F("ConnectionControl", headers=[["cbor-3f2a19", "01"]])],
      VHEAD + "0b302e302e302d4146544552 01 0e 0b63626f722d336632613139 0101")
valid("multi_uni_stream_three_messages", "three reliable messages on one stream, numbers 0..2",
      [msg(8, 0, payload=b"a"), msg(8, 1, payload=b"b"), msg(8, 2, [13], b"c")],
      "03080000 0161 03080100 0162 03080201 0d 0163")
valid("multi_version_two_messages", "a datagram: Version then two Messages",
      [AFTER, msg(0, 5, payload=b"\x00"), msg(0, 6, payload=b"\x01")])
valid("multi_channel_control_then_acks", "receiver side of a control stream: ChannelControl, acks, CloseReceiver",
      [F("ChannelControl", channel=3), F("AckReliable", ranges=[2]), F("AckNackUnreliable", ranges=[0, 1, 3]),
       F("CloseReceiver", ranges=[1])], "0203 050102 0603000103 080101")
valid("multi_sender_tail", "sender side tail: SentUnreliable 0, SentUnreliable 3, FinishSender 2",
      [F("SentUnreliable", count=0), F("SentUnreliable", count=3), F("FinishSender", reliable_count=2)],
      "0400 0403 0702")
valid("multi_version_closed_channel_lost", "a uni stream: Version then ClosedChannelLost",
      [AFTER, F("ClosedChannelLost", channel=1 << 63)])
valid("multi_every_type", "one frame of each of the ten types back to back",
      [AFTER, F("ConnectionControl", headers=[]), F("ChannelControl", channel=2), msg(2, 0, [6], b"z"),
       F("SentUnreliable", count=1), F("AckReliable", ranges=[1]), F("AckNackUnreliable", ranges=[0, 1]),
       F("FinishSender", reliable_count=1), F("CloseReceiver", ranges=[1]), F("ClosedChannelLost", channel=7)])
valid("multi_version_not_first", "Version after another frame: the codec decodes it; the engine rejects the placement",
      [F("SentUnreliable", count=5), AFTER])
valid("multi_100_messages", "100 Messages back to back", [msg(1, i, payload=bytes([i])) for i in range(100)])
valid("multi_empty_ranges", "empty AckReliable and AckNackUnreliable frames", [F("AckReliable", ranges=[]),
      F("AckNackUnreliable", ranges=[])], "0500 0600")


def main() -> None:
    doc = json.loads(OUT.read_text())
    ours = {v["name"] for v in VECTORS}
    kept = [v for v in doc["vectors"] if v["name"] not in ours and v.get("origin") != ORIGIN]
    for v in VECTORS:
        v["origin"] = ORIGIN
    doc["vectors"] = kept + VECTORS
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(kept)} kept + {len(VECTORS)} generated = {len(doc['vectors'])} vectors in {OUT.name}")


if __name__ == "__main__":
    main()
