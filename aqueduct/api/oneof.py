"""`aqueduct.OneOf(Put, Get)`: a union of message types that mypy carries wherever a message type goes.

Theory of operation. mypy accepts no union where `type[T]` is expected: `channel(Put | Get)` or
`serve(..., entrypoint=Put | Get)` are "No overload variant" errors, and the halves they make are `Any`. A
`OneOf[T]` is a value that mypy can carry instead: the constructor's overloads type `OneOf(Put, Get)` as
`OneOf[Put | Get]` (two to six members, and `None` last for an optional one: `OneOf(int, None)` is
`OneOf[int | None]`), and every place that takes a message type (`channel`, `oneshot`, `connect` and `serve`'s
`entrypoint=`, `reconnecting`, `Broadcast`, `Watch`, `request`'s `reply_type=`) takes `type[T] | OneOf[T]` and
types its halves with T. At run time a `OneOf` holds the union itself (`.type`): that is what the channel checks
and converts with and what its schema describes (`type_of` unwraps it where a message type is taken in).
"""

from __future__ import annotations

import typing
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
D = TypeVar("D")
E = TypeVar("E")
F = TypeVar("F")


class OneOf(Generic[T]):
    """A union of message types, typed for mypy: `channel(OneOf(Put, Get))` is `(Sender[Put | Get], ...)`.

    `members` are the types given (None as `type(None)`), `type` their union, as a message type."""

    __slots__ = ("members", "type")

    @overload
    def __init__(self: OneOf[A | B], a: type[A], b: type[B], /) -> None: ...
    @overload
    def __init__(self: OneOf[A | B | C], a: type[A], b: type[B], c: type[C], /) -> None: ...
    @overload
    def __init__(self: OneOf[A | B | C | D], a: type[A], b: type[B], c: type[C], d: type[D], /) -> None: ...
    @overload
    def __init__(self: OneOf[A | B | C | D | E],
        a: type[A], b: type[B], c: type[C], d: type[D], e: type[E], /) -> None: ...
    @overload
    def __init__(self: OneOf[A | B | C | D | E | F],
        a: type[A], b: type[B], c: type[C], d: type[D], e: type[E], f: type[F], /) -> None: ...
    @overload
    def __init__(self: OneOf[A | None], a: type[A], none: None, /) -> None: ...
    @overload
    def __init__(self: OneOf[A | B | None], a: type[A], b: type[B], none: None, /) -> None: ...
    @overload
    def __init__(self: OneOf[A | B | C | None], a: type[A], b: type[B], c: type[C], none: None, /) -> None: ...
    @overload
    def __init__(self: OneOf[A | B | C | D | None],
        a: type[A], b: type[B], c: type[C], d: type[D], none: None, /) -> None: ...
    @overload
    def __init__(self: OneOf[A | B | C | D | E | None],
        a: type[A], b: type[B], c: type[C], d: type[D], e: type[E], none: None, /) -> None: ...
    def __init__(self, *members: Any) -> None:
        if len(members) < 2:
            raise TypeError("OneOf takes two or more message types (one type is given as itself)")
        self.members: tuple[Any, ...] = tuple(type(None) if m is None else m for m in members)
        self.type: Any = typing.Union[self.members]  # noqa: UP007  (a union of runtime values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OneOf) and other.type == self.type

    def __hash__(self) -> int:
        return hash(self.type)

    def __repr__(self) -> str:
        return f"OneOf({', '.join(getattr(m, '__name__', repr(m)) for m in self.members)})"


def type_of(message_type: Any) -> Any:
    """The message type itself: a `OneOf`'s union, anything else as it is."""
    return message_type.type if isinstance(message_type, OneOf) else message_type


__all__ = ["OneOf"]
