"""Attachments on the sending side: minting channel IDs and creating the halves we keep (spec: "Channel
IDs" (minting), "Attachments", and the links that make a new half "reachable").

A message that attaches k new channels mints k IDs in order, one per
attachment: a channel whose sender goes to the peer flows to us, one whose
receiver goes to the peer flows away. The IDs are taken from a copy of the
minter (`mint`) and the copy replaces it only once the message is sure to
be written (`commit`), so a send that fails (too large, too many channels)
uses no ID. The half we keep of each new channel is not reachable and has
no control stream until the peer opens it; the link from the message to
the halves it created is recorded in the creation links (creation.py), where an
ack of the message makes them reachable and a nack loses them.

Minting owns the minter; halves.py and creation.py own what it adds.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import LimitExceeded
from ..wire.channel_id import ChannelId, ChannelIdMinter
from .app import AttachKind
from .context import Context
from .creation import CreationLinks, MsgKey
from .halves import Halves


class Minting:
    """The channel IDs this side mints, and the local halves of the channels it attaches."""

    def __init__(self, ctx: Context, halves: Halves, links: CreationLinks) -> None:
        self._side = ctx.side
        self._max_channels = ctx.config.max_channels
        self._halves = halves
        self._links = links
        self._minter = ChannelIdMinter(ctx.side)

    def mint(self, attach: Sequence[AttachKind]) -> tuple[ChannelIdMinter, list[int]]:
        """IDs for `attach`, from a copy of the minter that `commit` makes current (LimitExceeded past
        max_channels)."""
        if not attach:
            return self._minter, []
        if self._halves.count() + len(attach) > self._max_channels:
            raise LimitExceeded(f"more than max_channels={self._max_channels} channels")
        minter = self._minter.copy()
        side = self._side
        return minter, [minter.mint(to=side.other if not k.gives_sender else side, oneshot=k.oneshot) for k in attach]

    def commit(
        self,
        minter: ChannelIdMinter,
        parent: int,
        parent_channel: int,
        key: MsgKey,
        ids: list[int],
        attach: Sequence[AttachKind],
    ) -> list[int]:
        """Message `key` of sender `parent` is written with `ids`: create the halves we keep, linked from it."""
        self._minter = minter
        created = [self._create_local_half(ChannelId(cid), kind) for cid, kind in zip(ids, attach, strict=True)]
        if created:
            self._links.add_link(parent, parent_channel, key, created)
        return created

    def _create_local_half(self, channel: ChannelId, kind: AttachKind) -> int:
        """A half we keep for a channel we just minted: unreachable, no control stream until the peer opens it."""
        if kind.gives_sender:
            h = self._halves.add_receiver(channel, exposed=True, claimed=True).handle
        else:
            h = self._halves.add_sender(channel, reachable=False, exposed=True).handle
        self._links.add_unreachable(h, channel, not kind.gives_sender)
        return h
