"""Capture frames sent by real Aeron media drivers into specs/vectors/aeron-wire.json.

Two pyaeron processes (real C media drivers) talk through our recording
impairment proxy: a publication with small, MTU-sized, fragmented and
term-rotating messages under 5% loss (NAKs, retransmits), a subscriber with
congestion control `cc=cubic` (RTTM both ways) and a group tag (44-byte SM),
end of stream, and a subscriber restart that makes the receiver elicit SETUP.
Each distinct kind of datagram is kept (hex plus decoded fields).
Run: .venv/bin/python scripts/capture_aeron_vectors.py
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

from aeron_compat.native.codec import decode_datagram
from aeron_compat.native.driver import NativeDriver
from aeron_compat.native.interop import RealPeer, ensure_venv
from aeron_compat.native.proxy import ImpairmentProxy
from aeron_compat.native.vectors import frame_to_json

OUT = Path(__file__).resolve().parents[1] / "specs" / "vectors" / "aeron-wire.json"
STREAM = 77
PER_KIND = 2


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kind(direction: str, data: bytes) -> tuple[Any, ...]:
    frames = decode_datagram(data)
    return direction, tuple(sorted({(type(f).__name__, getattr(f, "flags", 0)) for f in frames})), len(frames) > 1


def capture(python: Path, driver: NativeDriver) -> list[tuple[str, str, bytes]]:
    sizes = [0, 10, 1376, 1377, 5000] + [32] * 300 + [1000] * 60
    sub_port = free_port()
    sub_channel = f"aeron:udp?endpoint=127.0.0.1:{sub_port}|cc=cubic|gtag=7"
    out: list[tuple[str, str, bytes]] = []
    proxy = ImpairmentProxy(driver, ("127.0.0.1", sub_port), loss=0.05, seed=3, record=True)
    host, port = proxy.address
    pub_channel = f"aeron:udp?endpoint={host}:{port}|term-length=64k"
    rtt_env = {"AERON_CUBICCONGESTIONCONTROL_MEASURERTT": "true"}
    with RealPeer(python, role="sub", channel=sub_channel, stream=STREAM, count=len(sizes), env=rtt_env) as sub:
        sub.expect("ready")
        with RealPeer(python, role="pub", channel=pub_channel, stream=STREAM, sizes=sizes) as pub:
            sub.expect("done")
            time.sleep(0.5)  # let RTT measurement and status messages run for a while
            out += [("stream under 5% loss, cc=cubic, gtag=7", d, b) for d, b in proxy.recorded]
            proxy.recorded.clear()
            proxy.loss = 0.0
            sub.close()
            with RealPeer(python, role="sub", channel=sub_channel, stream=STREAM) as sub2:
                sub2.expect("available")
                out += [("subscriber restarted: receiver elicits SETUP", d, b) for d, b in proxy.recorded]
                proxy.recorded.clear()
                pub.send("close")
                sub2.expect("unavailable")
                out += [("publication closed: end of stream", d, b) for d, b in proxy.recorded]
    return out


def main() -> int:
    python = ensure_venv()
    with NativeDriver() as driver:
        recorded = capture(python, driver)
    seen: dict[tuple[Any, ...], int] = {}
    vectors = []
    for scenario, direction, data in recorded:
        k = kind(direction, data)
        if seen.get(k, 0) >= PER_KIND:
            continue
        seen[k] = seen.get(k, 0) + 1
        sender = "publication's driver" if direction == "to_target" else "subscription's driver"
        vectors.append({"scenario": scenario, "sent_by": sender, "hex": data.hex(),
                        "frames": [frame_to_json(f) for f in decode_datagram(data)]})
    doc = {
        "description": "Datagrams sent by real Aeron C media drivers (pyaeron 0.1.0, Aeron 1.53.0-SNAPSHOT) over "
                       "loopback UDP, captured by scripts/capture_aeron_vectors.py; each with its decoded frames.",
        "vectors": vectors,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(vectors)} vectors from {len(recorded)} datagrams -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
