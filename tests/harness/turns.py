"""Log a live connection's packet turns: "rx" for each datagram the adapter receives, "tx" for each transmit.

The adapter rules about what leaves in which loop turn (a reply carries the ACK of its request; a service
call's answer shares the call's turn) are read from this log beside the application's own entries. A
transmit made by an aioquic timer due in the same turn is not logged: it may run first, and is not the
adapter's doing.
"""

from __future__ import annotations

from typing import Any


def log_turns(proto: Any, log: list[str]) -> None:
    """Wrap `proto`'s datagram_received, transmit and _handle_timer to append "rx"/"tx" to `log`."""
    received, transmit, timer = proto.datagram_received, proto.transmit, proto._handle_timer
    in_timer = False

    def on_datagram(data: bytes, addr: Any) -> None:
        log.append("rx")
        received(data, addr)

    def on_transmit() -> None:
        if not in_timer:
            log.append("tx")
        transmit()

    def on_timer() -> None:
        nonlocal in_timer
        in_timer = True
        try:
            timer()
        finally:
            in_timer = False

    proto.datagram_received, proto.transmit, proto._handle_timer = on_datagram, on_transmit, on_timer
