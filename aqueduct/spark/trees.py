"""Attachment trees, computed on the driver from one edge per attached channel.

A channel attached to a message of channel P is P's child. Edges are few
(one per channel, however many messages), so depth and fan-out are a plain
breadth-first walk from the roots (channels nobody carried). Channel ids
are never reused within a connection; a cycle in broken input is cut by the
visited set, and a channel only reachable through one gets no depth.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One channel's place in its connection's tree."""

    parent: int | None
    depth: int | None
    """0 for a root; None when unreachable from any root (a cycle in bad data)."""
    fanout: int


def tree_nodes(channels: Iterable[int], edges: Iterable[tuple[int, int]]) -> dict[int, NodeInfo]:
    """Depth, parent and fan-out per channel of one connection; `edges` are (parent, child) pairs."""
    children: dict[int, list[int]] = defaultdict(list)
    parent: dict[int, int] = {}
    nodes = set(channels)
    for p, c in edges:
        if c not in parent and c != p:
            parent[c] = p
            children[p].append(c)
            nodes.update((p, c))
    depth: dict[int, int] = {}
    queue = deque((n, 0) for n in sorted(nodes) if n not in parent)
    while queue:
        node, d = queue.popleft()
        if node in depth:
            continue
        depth[node] = d
        queue.extend((c, d + 1) for c in children.get(node, ()))
    return {n: NodeInfo(parent.get(n), depth.get(n), len(children.get(n, ()))) for n in nodes}
