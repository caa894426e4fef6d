# A client process for the standalone driver tests, steered line by line on stdin and reporting
# on stdout (one JSON object per line), so the tests synchronise on what it says, never on sleeps.
#   python standalone_peer.py sub DIR CHANNEL STREAM   -> {"ready": ...}; then "poll N" -> {"got": [...]}
#   python standalone_peer.py pub DIR CHANNEL STREAM MODE -> {"connected": ...}; then "send N" -> {"positions": [...]}
# MODE is "standalone" or "embedded" (the publisher's own driver, reaching the endpoint over QUIC).
"""Publisher / subscriber process driven by tests/aeron/test_standalone_driver.py."""

from __future__ import annotations

import json
import sys

from aeron_compat import Aeron, BackoffIdleStrategy, Context, Subscription


def say(**msg: object) -> None:
    print(json.dumps(msg), flush=True)


def subscriber(aeron: Aeron, channel: str, stream: int) -> None:
    lost: list[int] = []
    sub = aeron.add_subscription(channel, stream, on_unavailable_image=lambda image: lost.append(image.session_id))
    say(ready=sub.registration_id)
    idle = BackoffIdleStrategy()
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "poll":
            say(got=receive(sub, int(arg), idle))
        elif command == "eos":
            while not lost:
                idle.idle(sub.poll(lambda buf, hdr: None, 100))
            say(unavailable=lost)
        else:
            return


def receive(sub: Subscription, want: int, idle: BackoffIdleStrategy) -> list[list[object]]:
    got: list[list[object]] = []
    while len(got) < want:
        idle.idle(sub.poll(lambda buf, hdr: got.append([bytes(buf).decode(), hdr.position]), want - len(got)))
    return got


def publisher(aeron: Aeron, channel: str, stream: int) -> None:
    pub = aeron.add_publication(channel, stream)
    idle = BackoffIdleStrategy()
    while not pub.is_connected:
        idle.idle(0)
    say(connected=pub.session_id)
    sent = 0
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command != "send":
            return
        positions = []
        for _ in range(int(arg)):
            while (result := pub.offer(f"m{sent}".encode())) < 0:
                idle.idle(0)
            positions.append(result)
            sent += 1
        say(positions=positions)


def main() -> None:
    role, directory, channel, stream = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    mode = sys.argv[5] if len(sys.argv) > 5 else "standalone"
    with Aeron.connect(Context(driver_mode=mode, aeron_dir=directory if mode == "standalone" else None,
                               counters_interval=0)) as aeron:
        (subscriber if role == "sub" else publisher)(aeron, channel, stream)


if __name__ == "__main__":
    main()
