"""Making halves: `channel()` and `oneshot()` pairs, halves bound to a network channel, and the engine
attachment kind a half travels as."""

from __future__ import annotations

from typing import Any, overload

from ...core.app import AttachKind, Delivery
from ..oneof import OneOf, type_of
from ..validation import spec_for
from .base import DEFAULT_LOCAL_CAPACITY, Link, ModeLike, OnInvalid, T, _Pipe
from .oneshot import Half, OneshotReceiver, OneshotSender
from .ports import LocalPort
from .receiver import Receiver
from .sender import Sender


@overload
def channel(
    mode: ModeLike = ..., /, *, capacity: int = ..., on_invalid: OnInvalid = ...
) -> tuple[Sender[Any], Receiver[Any]]: ...
@overload
def channel(
    *, mode: ModeLike, capacity: int = ..., on_invalid: OnInvalid = ...
) -> tuple[Sender[Any], Receiver[Any]]: ...
@overload
def channel(
    message_type: type[T] | OneOf[T], mode: ModeLike = ..., capacity: int = ..., *, on_invalid: OnInvalid = ...
) -> tuple[Sender[T], Receiver[T]]: ...
def channel(
    message_type: Any = None,
    mode: ModeLike = Delivery.ORDERED,
    capacity: int = DEFAULT_LOCAL_CAPACITY,
    *,
    on_invalid: OnInvalid = "raise",
) -> tuple[Sender[Any], Receiver[Any]]:
    """A new channel as (Sender, Receiver); in-process until a half is sent inside a message.

    `channel(T)`: every message is a T, checked before sending and converted on arrival (`channel(OneOf(A, B))`:
    an A or a B); `channel()`: any value. (`channel("unordered")` still names a mode: a string or Delivery
    first is the mode.)"""
    if isinstance(message_type, str | Delivery):
        message_type, mode = None, message_type
    tx: Sender[Any] = Sender(mode=mode)
    rx: Receiver[Any] = Receiver()
    _pair(tx, rx, message_type, capacity)
    rx.on_invalid = on_invalid
    return tx, rx


@overload
def oneshot() -> tuple[OneshotSender[Any], OneshotReceiver[Any]]: ...
@overload
def oneshot(message_type: type[T] | OneOf[T]) -> tuple[OneshotSender[T], OneshotReceiver[T]]: ...
def oneshot(message_type: Any = None) -> tuple[OneshotSender[Any], OneshotReceiver[Any]]:
    """A oneshot channel: one message, then finished (the spec's oneshot channel ID bit on the wire)."""
    tx: OneshotSender[Any] = OneshotSender()
    rx: OneshotReceiver[Any] = OneshotReceiver()
    _pair(tx, rx, message_type, 1)
    return tx, rx


def _pair(tx: Sender[Any], rx: Receiver[Any], message_type: Any, capacity: int) -> None:
    port = LocalPort(_Pipe(capacity))  # (both halves share one port: a port never changes in place)
    spec = spec_for(type_of(message_type)) if message_type is not None else None
    tx.type_as(spec)
    rx.type_as(spec)
    tx.join(port)
    rx.join(port)


def networked_half(link: Link, handle: int, *, is_sender: bool, oneshot: bool = False) -> Half:
    """A half bound to a network channel (an attachment we received); untyped until a message type types it.

    A receiver that arrived in a message may be a broadcast subscription: it takes lag notices as Lagged."""
    half: Half
    if is_sender:
        half = OneshotSender() if oneshot else Sender()
    else:
        half = OneshotReceiver() if oneshot else Receiver()
        half.accept_lags()
    half.bind(link, handle)
    return half


def networked_sender(link: Link, handle: int) -> Sender[Any]:
    """A Sender bound to a network channel."""
    tx: Sender[Any] = Sender()
    tx.bind(link, handle)
    return tx


def networked_receiver(link: Link, handle: int) -> Receiver[Any]:
    """A Receiver bound to a network channel."""
    rx: Receiver[Any] = Receiver()
    rx.bind(link, handle)
    return rx


_KINDS = {Sender: AttachKind.SENDER, Receiver: AttachKind.RECEIVER, OneshotSender: AttachKind.ONESHOT_SENDER,
          OneshotReceiver: AttachKind.ONESHOT_RECEIVER}


def attach_kind(half: Half) -> AttachKind:
    """The engine attachment for handing `half` to the peer."""
    half.check_travel()
    return _KINDS[type(half)]
