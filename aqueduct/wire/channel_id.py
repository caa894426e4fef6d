"""Channel IDs and the per-space minter.

A channel ID is a 64-bit int: bit 0 direction (0 to server, 1 to client),
bit 1 minter (0 client, 1 server), bit 2 oneshot, bits 3.. the index. The
three low bits name an index space; each side mints indexes in its spaces
sequentially from 0, except that the client's to-server multishot space
starts at 1 because index 0 there is the entrypoint.
"""

from __future__ import annotations

from enum import Enum

from .errors import ProtocolError

MAX_INDEX = (1 << 61) - 1


class Side(Enum):
    """Which end of the connection."""

    CLIENT = 0
    SERVER = 1

    @property
    def other(self) -> Side:
        """The opposite side."""
        return Side.SERVER if self is Side.CLIENT else Side.CLIENT


class ChannelId(int):
    """A channel ID: an int with its fields as properties."""

    __slots__ = ()

    @classmethod
    def make(cls, *, to: Side, minted_by: Side, oneshot: bool, index: int) -> ChannelId:
        """Build an ID from its fields; `to` is the side holding the receiver."""
        if not 0 <= index <= MAX_INDEX:
            raise ValueError(f"channel index out of range: {index}")
        return cls(index << 3 | int(oneshot) << 2 | minted_by.value << 1 | _DIRECTION_BIT[to])

    @property
    def to(self) -> Side:
        """The side that holds the receiver."""
        return Side.CLIENT if self & 1 else Side.SERVER

    @property
    def direction(self) -> str:
        """`to_server` or `to_client`, as in the vectors."""
        return "to_client" if self & 1 else "to_server"

    @property
    def minted_by(self) -> Side:
        """The side that minted (created) the channel."""
        return Side.SERVER if self & 2 else Side.CLIENT

    @property
    def oneshot(self) -> bool:
        """Whether the channel carries exactly one message."""
        return bool(self & 4)

    @property
    def index(self) -> int:
        """The index within its space."""
        return int(self) >> 3

    @property
    def space(self) -> int:
        """The three low bits: which index space the ID belongs to."""
        return int(self) & 7

    def __repr__(self) -> str:
        return (
            f"ChannelId({int(self)}: {self.direction}, minted by {self.minted_by.name.lower()}"
            f"{', oneshot' if self.oneshot else ''}, index {self.index})"
        )


ENTRYPOINT = ChannelId(0)
_DIRECTION_BIT = {Side.SERVER: 0, Side.CLIENT: 1}  # bit 0 tells where the receiver is: 0 on the server


class ChannelIdMinter:
    """Hands out fresh channel IDs for one side of a connection."""

    def __init__(self, side: Side) -> None:
        self.side = side
        self._next = [0] * 8
        if side is Side.CLIENT:
            self._next[0] = 1  # index 0 of the client's to-server multishot space is the entrypoint

    def copy(self) -> ChannelIdMinter:
        """An independent minter in the same state (to mint tentatively and keep it only on success)."""
        twin = ChannelIdMinter.__new__(ChannelIdMinter)
        twin.side = self.side
        twin._next = self._next.copy()
        return twin

    def mint(self, *, to: Side, oneshot: bool = False) -> ChannelId:
        """Mint the next ID for a channel whose receiver will be on side `to`."""
        space = int(oneshot) << 2 | self.side.value << 1 | _DIRECTION_BIT[to]
        index = self._next[space]
        if index > MAX_INDEX:
            raise ProtocolError("channel index space exhausted")
        self._next[space] = index + 1
        return ChannelId(index << 3 | space)
