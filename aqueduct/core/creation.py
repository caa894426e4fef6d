"""Creation links, reachability and cascading loss (spec: "reachable" state).

A node stands for a locally created half (keyed by its handle) that can
still be reached by a link, or that holds links: it exists while the half is
not reachable (a parent link points at it) or while it has children (links
from messages it sent to the halves those messages created). Nodes outlive
their halves: a half that ceased while unreachable keeps its node so a later
cascade can find it (then the engine sends ClosedChannelLost).

- ack of message m on sender S: if S is reachable, m's children become
  reachable (and recursively the acked children of those); otherwise m is
  remembered as acked until S becomes reachable.
- nack of m: m's children run cascading loss: each is lost, and every child
  of every message it sent is lost too, through every level.

Both walks use an explicit stack (trees may be 10,000 deep), never recursion.
The engine supplies callbacks for what happens to a half at each visit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

MsgKey = tuple[bool, int]
"""(reliable, number): a message in one of a sender's two number spaces."""


@dataclass(slots=True)
class Node:
    """Link state of one locally created half."""

    channel: int
    is_sender: bool
    reachable: bool
    children: dict[MsgKey, list[int]] = field(default_factory=dict)
    acked: set[MsgKey] = field(default_factory=set)
    """Keys of `children` acked while the node was unreachable."""


class CreationLinks:
    """All nodes of one connection."""

    def __init__(self) -> None:
        self.nodes: dict[int, Node] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def add_unreachable(self, node_id: int, channel: int, is_sender: bool) -> None:
        """A half created locally by minting: unreachable until its creating message is acked in reach."""
        self.nodes[node_id] = Node(channel, is_sender, reachable=False)

    def add_link(self, parent: int, parent_channel: int, key: MsgKey, children: list[int]) -> None:
        """Message `key` sent on `parent` created `children`."""
        node = self.nodes.get(parent)
        if node is None:
            node = self.nodes[parent] = Node(parent_channel, True, reachable=True)
        node.children[key] = children

    def keys_in(self, parent: int, reliable: bool, first: int, stop: int) -> list[MsgKey] | None:
        """The messages of `parent` numbered first..stop-1 (one number space) that created halves, if any."""
        node = self.nodes.get(parent)
        if node is None or not node.children:
            return None
        children = node.children
        if stop - first <= len(children):
            return [(reliable, n) for n in range(first, stop) if (reliable, n) in children]
        return [k for k in children if k[0] == reliable and first <= k[1] < stop]

    def _gc(self, node_id: int, node: Node) -> None:
        if node.reachable and not node.children:
            del self.nodes[node_id]

    def acked(self, parent: int, keys: Iterable[MsgKey], on_reachable: Callable[[int], None]) -> None:
        """Messages `keys` of `parent` were acked: propagate reachability if `parent` is reachable."""
        node = self.nodes.get(parent)
        if node is None:
            return
        ready: list[int] = []
        for key in keys:
            kids = node.children.get(key)
            if kids is None:
                continue
            if node.reachable:
                del node.children[key]
                ready.extend(kids)
            else:
                node.acked.add(key)
        self._gc(parent, node)
        self._make_reachable(ready, on_reachable)

    def _make_reachable(self, stack: list[int], on_reachable: Callable[[int], None]) -> None:
        while stack:
            nid = stack.pop()
            node = self.nodes.get(nid)
            if node is None or node.reachable:
                continue
            node.reachable = True
            for key in node.acked:
                stack.extend(node.children.pop(key, ()))
            node.acked.clear()
            on_reachable(nid)
            self._gc(nid, node)

    def nacked(self, parent: int, keys: Iterable[MsgKey], on_lost: Callable[[int, Node], None]) -> None:
        """Messages `keys` of `parent` were nacked: cascade loss through their children."""
        node = self.nodes.get(parent)
        if node is None:
            return
        stack: list[int] = []
        for key in keys:
            kids = node.children.pop(key, None)
            if kids is not None:
                node.acked.discard(key)
                stack.extend(kids)
        self._gc(parent, node)
        self.cascade(stack, on_lost)

    def cascade(self, stack: list[int], on_lost: Callable[[int, Node], None]) -> None:
        """Run cascading loss detection on every id in `stack` and everything they created."""
        while stack:
            nid = stack.pop()
            node = self.nodes.pop(nid, None)
            if node is None:
                continue
            on_lost(nid, node)
            for kids in node.children.values():
                stack.extend(kids)

    def clear(self) -> None:
        """Forget everything (connection over)."""
        self.nodes.clear()
