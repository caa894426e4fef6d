# The part of a try_claim result that does not depend on where the claim lives: the claimed buffer,
# truthiness (a failed claim is falsy and `result` holds the code), commit/abort exactly once, and the
# context manager that commits on normal exit and aborts on an exception.  A subclass settles the
# claim with its owner in `_settle` (the in-process log or the native publication).
"""`ClaimBase`: the owner-independent half of a `BufferClaim`."""

from __future__ import annotations

from typing import Self


class ClaimBase:
    """Space claimed by `try_claim`: fill `buffer`, then commit (or abort); commits on normal exit of `with`."""

    def __init__(self, result: int, position: int, length: int) -> None:
        self.result = result
        self.position = position
        self.buffer = memoryview(bytearray(length))
        self.reserved_value = 0
        self.is_open = result > 0
        self.committed: bool | None = None

    def __bool__(self) -> bool:
        return self.result > 0

    @property
    def length(self) -> int:
        """Claimed payload length."""
        return len(self.buffer)

    def put_bytes(self, data: bytes, offset: int = 0) -> None:
        """Copy `data` into the claimed buffer at `offset`."""
        self.buffer[offset : offset + len(data)] = data

    def commit(self) -> None:
        """Publish the claimed frame."""
        self._finish(True)

    def abort(self) -> None:
        """Give the space up: it becomes padding that readers skip."""
        self._finish(False)

    def _finish(self, commit: bool) -> None:
        if self.is_open:
            self.is_open = False
            self._settle(commit)

    def _settle(self, commit: bool) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._finish(exc_type is None)
