"""Random application scripts: what the two apps do, as replayable data.

An Action names its target by `pick`, an index counted from the newest
matching handle the app holds when the action runs (modulo how many there
are), so a script stays meaningful when the shrinker deletes actions. Small
picks are likelier: new channels get used, which builds attachment depth.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import Enum

from ..core.app import AttachKind, Delivery
from ..wire.channel_id import Side


class ActionKind(Enum):
    """One application call (or a handful, for DRAIN)."""

    SEND = "send"
    FINISH = "finish"
    CANCEL = "cancel"
    CLOSE_RECEIVER = "close_receiver"
    DROP_SENDER = "drop_sender"
    DROP_RECEIVER = "drop_receiver"
    TAKE = "take"
    DRAIN = "drain"
    CLOSE_CONNECTION = "close_connection"
    POKE = "poke"
    """A late call on a handle that is finishing, ended or closed: it must fail with a channel error or do nothing."""


_WEIGHTS: dict[ActionKind, float] = {
    ActionKind.SEND: 40,
    ActionKind.TAKE: 14,
    ActionKind.DRAIN: 8,
    ActionKind.FINISH: 5,
    ActionKind.CANCEL: 3,
    ActionKind.CLOSE_RECEIVER: 3,
    ActionKind.DROP_SENDER: 3,
    ActionKind.DROP_RECEIVER: 3,
    ActionKind.CLOSE_CONNECTION: 0.3,
    ActionKind.POKE: 3,
}
_DELIVERIES = (Delivery.ORDERED, Delivery.ORDERED, Delivery.UNORDERED, Delivery.UNRELIABLE)
_DTS = (0.0, 0.0, 0.0005, 0.005, 0.05, 0.3)


@dataclass(frozen=True)
class Action:
    """One step of a script: let `dt` of virtual time pass, then `side`'s app does `kind`."""

    dt: float
    side: Side
    kind: ActionKind
    pick: int = 0
    delivery: Delivery = Delivery.ORDERED
    attach: tuple[AttachKind, ...] = ()
    pad: int = 0
    discard: bool = False
    """TAKE/DRAIN: drop the attached handles at once instead of keeping them."""

    def __str__(self) -> str:
        who = "C" if self.side is Side.CLIENT else "S"
        extra = ""
        if self.kind is ActionKind.SEND:
            att = ",".join(a.value for a in self.attach)
            extra = f" {self.delivery.value} attach=[{att}] pad={self.pad}"
        elif self.discard:
            extra = " discard-attachments"
        return f"+{self.dt:g}s {who} {self.kind.value} pick={self.pick}{extra}"


def random_script(rng: random.Random, n: int, *, close_weight: float | None = None) -> list[Action]:
    """`n` random actions."""
    weights = dict(_WEIGHTS)
    if close_weight is not None:
        weights[ActionKind.CLOSE_CONNECTION] = close_weight
    kinds = list(weights)
    cum = list(weights.values())
    out = []
    for _ in range(n):
        kind = rng.choices(kinds, cum)[0]
        delivery = rng.choice(_DELIVERIES)
        attach: tuple[AttachKind, ...] = ()
        if kind is ActionKind.SEND and rng.random() < 0.45:
            attach = tuple(rng.choice(list(AttachKind)) for _ in range(rng.choice((1, 1, 2))))
        pad = rng.choice((0, 0, 10, 100, 400, 400, 5000))
        if delivery is Delivery.UNRELIABLE:  # mostly small; sometimes at the datagram limit (either side of it)
            pad = rng.randint(1040, 1090) if pad == 5000 else min(pad, 200)
        out.append(
            Action(
                dt=rng.choice(_DTS),
                side=rng.choice((Side.CLIENT, Side.SERVER)),
                kind=kind,
                pick=min(int(rng.expovariate(0.7)), 20),
                delivery=delivery,
                attach=attach,
                pad=pad,
                discard=rng.random() < 0.05,
            )
        )
    return out
