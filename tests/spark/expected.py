"""Independent, plain-Python expectations for a recording (no Spark), to check `analyze` against."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

MESSAGE = {"message_sent", "message_received"}
ENDS = {
    "channel_finished", "channel_cancelled", "channel_lost", "receiver_dropped", "channel_closed",
    "channel_connection_lost",
}  # fmt: skip


def flows(events: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Per (connection, channel, delivery, direction): messages, bytes, acked, nacked, acked latencies (sorted)."""
    out: dict[tuple[Any, ...], dict[str, Any]] = defaultdict(
        lambda: {"messages": 0, "bytes": 0, "acked": 0, "nacked": 0, "latencies": []}
    )
    for e in events:
        key = (e["connection"], e["channel"], e["delivery"], e["direction"])
        if e["kind"] in MESSAGE:
            out[key]["messages"] += 1
            out[key]["bytes"] += e["length"]
        elif e["kind"] == "acked":
            out[key]["acked"] += 1
            if e["latency_ns"] is not None:
                out[key]["latencies"].append(e["latency_ns"])
        elif e["kind"] == "nacked":
            out[key]["nacked"] += 1
    for v in out.values():
        v["latencies"].sort()
    return dict(out)


def channels(events: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """Per (connection, channel): end state, lifetime (s), parent, depth, fanout."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    parent: dict[tuple[str, int], int] = {}
    for e in sorted(events, key=lambda e: e["time_ns"]):
        if e["channel"] is None:
            continue
        key = (e["connection"], e["channel"])
        ch = out.setdefault(key, {"first": e["time_ns"], "created": None, "end": None, "state": "open"})
        if e["kind"] == "channel_created" and ch["created"] is None:
            ch["created"] = e["time_ns"]
        if e["kind"] in ENDS and ch["end"] is None:
            ch["end"], ch["state"] = e["time_ns"], e["kind"]
        if e["kind"] == "channel_created" and e["parent"] is not None:
            parent.setdefault(key, e["parent"])
        for child in (e["attachments"] or []) if e["kind"] in MESSAGE else []:
            parent.setdefault((e["connection"], child), e["channel"])
    for key, ch in out.items():
        start = ch["created"] if ch["created"] is not None else ch["first"]
        ch["lifetime_s"] = None if ch["end"] is None else (ch["end"] - start) / 1e9
        ch["parent"] = parent.get(key)
        depth, node = 0, key
        while node in parent:
            depth, node = depth + 1, (key[0], parent[node])
        ch["depth"] = depth
        ch["fanout"] = sum(1 for (conn, _), p in parent.items() if conn == key[0] and p == key[1])
    return out


def percentile_bounds(sorted_values: list[int], q: float) -> tuple[int, int]:
    """The values one rank either side of the q-quantile's rank: an exact-enough window for percentile_approx."""
    n = len(sorted_values)
    rank = max(1, math.ceil(q * n))
    return sorted_values[max(0, rank - 2)], sorted_values[min(n - 1, rank)]


def packets_lost(events: list[dict[str, Any]], connection: str) -> int:
    """Sum of the increases of a connection's cumulative lost-packet counter from 0; a decrease is a restart."""
    total = last = 0
    samples = sorted((e["time_ns"], e["packets_lost"]) for e in events
                     if e["connection"] == connection and e["kind"] == "connection_stats"
                     and e["packets_lost"] is not None)  # fmt: skip
    for _t, value in samples:
        total += value - last if value >= last else value
        last = value
    return total
