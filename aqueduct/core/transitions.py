"""Transition tables for the halves' states, and the error an illegal transition raises.

Each half (sender.py, receiver.py) has a small enum of protocol states and a
table of the moves allowed from each; its `move` method is the only place
its state changes, and it checks the table first. A move the table does
not allow is a bug in the engine, never the peer's doing (the peer's
mistakes are ProtocolErrors caught before any move), so it raises
IllegalTransition at once instead of corrupting a channel quietly.

Spec: the sender and receiver life cycles ("finish", "cancel", the close procedure).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import TypeVar

from ..wire.errors import AqueductError

S = TypeVar("S", bound=Enum)


class IllegalTransition(AqueductError):
    """An engine bug: a half was moved between two states its transition table does not connect."""


def checked(table: Mapping[S, frozenset[S]], what: str, handle: int, frm: S, to: S) -> S:
    """`to`, if the table allows moving there from `frm`; else raise IllegalTransition (naming `what` `handle`:
    the message is made only then, a half moves a few times per channel)."""
    if to not in table[frm]:
        raise IllegalTransition(f"{what} {handle}: no transition from {frm.name} to {to.name}")
    return to
