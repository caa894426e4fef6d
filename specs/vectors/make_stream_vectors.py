"""Write specs/vectors/stream-wire.json: one golden datagram per Marlin Stream packet kind and profile.

Run: `.venv/bin/python specs/vectors/make_stream_vectors.py`. The bytes are
laid out here field by field from the seed's diagrams (profile "seed": big
endian, DATA = stream id, packet number, offset, length) and from OpenWeaver's
Messages.hpp (profile "openweaver": little endian, DATA = packet number,
stream id, offset, length; DIAL/DIALCONF carry key-exchange bytes),
independently of aeron_compat.marlin.packets. Each vector also lists the
decoded fields by hand. `malformed` lists datagrams each profile must reject.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "stream-wire.json"
E = {"seed": "big", "openweaver": "little"}


def n(value: int, width: int, profile: str) -> str:
    return value.to_bytes(width, E[profile]).hex()  # type: ignore[arg-type]


def head(kind: int, src: int, dst: int, p: str) -> str:
    return "00" + f"{kind:02x}" + n(src, 4, p) + n(dst, 4, p)


def data(p: str, fin: bool, src: int, dst: int, sid: int, pn: int, off: int, body: bytes) -> dict[str, Any]:
    if p == "seed":
        mid = n(sid, 2, p) + n(pn, 8, p)
    else:
        mid = n(pn, 8, p) + n(sid, 2, p)
    trailer = bytes(16) + bytes(range(1, 13)) if p == "openweaver" else b""  # tag room, then the nonce
    return {"profile": p, "hex": head(int(fin), src, dst, p) + mid + n(off, 8, p) + n(len(body), 2, p) + body.hex()
            + trailer.hex(),
            "packet": {"type": "Data", "src_conn_id": src, "dst_conn_id": dst, "stream_id": sid,
                       "packet_number": pn, "offset": off, "data": body.hex(), "fin": fin, "trailer": trailer.hex()}}


def ack(p: str, src: int, dst: int, largest: int, entries: list[int], acked: list[list[int]]) -> dict[str, Any]:
    return {"profile": p, "hex": head(2, src, dst, p) + n(len(entries), 2, p) + n(largest, 8, p)
            + "".join(n(e, 8, p) for e in entries),
            "packet": {"type": "Ack", "src_conn_id": src, "dst_conn_id": dst, "largest": largest,
                       "entries": entries}, "acked": acked}


def bare(p: str, kind: int, name: str, src: int, dst: int, payload: bytes | None = None) -> dict[str, Any]:
    pkt: dict[str, Any] = {"type": name, "src_conn_id": src, "dst_conn_id": dst}
    if payload is not None:
        pkt["payload"] = payload.hex()
    return {"profile": p, "hex": head(kind, src, dst, p) + (payload or b"").hex(), "packet": pkt}


def vectors() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in ("seed", "openweaver"):
        out.append(data(p, False, 0x11223344, 0x55667788, 3, 0x0102030405060708, 0x1000, b"hello"))
        out.append(data(p, True, 0x11223344, 0x55667788, 0xFFFF, 9, 1 << 40, b""))
        out.append(data(p, True, 1, 2, 0, 0, 0, b"\x00\xff"))
        out.append(ack(p, 7, 8, 100, [1], [[100, 100]]))
        out.append(ack(p, 7, 8, 100, [3, 2, 5, 10, 1], [[98, 100], [91, 95], [80, 80]]))
        out.append(ack(p, 7, 8, 5, [6], [[0, 5]]))
        out.append(bare(p, 3, "Dial", 0xDEADBEEF, 0, b"" if p == "seed" else bytes(range(32))))
        out.append(bare(p, 4, "DialConf", 0xCAFEBABE, 0xDEADBEEF, b"" if p == "seed" else bytes(range(32, 64))))
        out.append(bare(p, 5, "Conf", 0xDEADBEEF, 0xCAFEBABE))
        out.append(bare(p, 6, "Rst", 0, 0xDEADBEEF))
    return out


def malformed() -> list[dict[str, str]]:
    bad: list[dict[str, str]] = []
    for p in ("seed", "openweaver"):
        bad += [
            {"profile": p, "why": "empty", "hex": ""},
            {"profile": p, "why": "short header", "hex": "0000" + "00" * 7},
            {"profile": p, "why": "version 1", "hex": "0105" + "01" * 8},
            {"profile": p, "why": "unknown type 0x07", "hex": "0007" + "01" * 8},
            {"profile": p, "why": "DATA header cut", "hex": "0000" + "01" * 8 + "00" * 19},
            {"profile": p, "why": "DATA length beyond datagram",
             "hex": head(0, 1, 2, p) + (n(1, 2, p) + n(0, 8, p) if p == "seed" else n(0, 8, p) + n(1, 2, p))
             + n(0, 8, p) + n(4, 2, p) + "aabbcc"},
            {"profile": p, "why": "DATA bytes after length",
             "hex": head(0, 1, 2, p) + (n(1, 2, p) + n(0, 8, p) if p == "seed" else n(0, 8, p) + n(1, 2, p))
             + n(0, 8, p) + n(1, 2, p) + "aabb" + "00" * (28 if p == "openweaver" else 0)},
            {"profile": p, "why": "DATA past the largest offset",
             "hex": head(0, 1, 2, p) + (n(1, 2, p) + n(0, 8, p) if p == "seed" else n(0, 8, p) + n(1, 2, p))
             + n((1 << 64) - 1, 8, p) + n(1, 2, p) + "aa" + "00" * (28 if p == "openweaver" else 0)},
            {"profile": p, "why": "ACK count beyond datagram", "hex": head(2, 1, 2, p) + n(2, 2, p) + n(9, 8, p)
             + n(1, 8, p)},
            {"profile": p, "why": "ACK ranges below zero", "hex": head(2, 1, 2, p) + n(1, 2, p) + n(3, 8, p)
             + n(5, 8, p)},
            {"profile": p, "why": "CONF with trailing bytes", "hex": head(5, 1, 2, p) + "00"},
            {"profile": p, "why": "RST with trailing bytes", "hex": head(6, 1, 2, p) + "0000"},
        ]
    bad += [
        {"profile": "openweaver", "why": "openweaver DATA without its trailer",
         "hex": head(0, 1, 2, "openweaver") + n(0, 8, "openweaver") + n(1, 2, "openweaver") + n(0, 8, "openweaver")
         + n(1, 2, "openweaver") + "aa"},
        {"profile": "seed", "why": "seed DIAL with nonzero destination", "hex": head(3, 1, 2, "seed")},
        {"profile": "seed", "why": "seed DIAL with payload", "hex": head(3, 1, 0, "seed") + "aa"},
        {"profile": "seed", "why": "seed DIALCONF with payload", "hex": head(4, 1, 2, "seed") + "aa"},
    ]
    return bad


def main() -> None:
    OUT.write_text(json.dumps({"vectors": vectors(), "malformed": malformed()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
