# Reassembly of fragmented messages, per session: a B fragment starts a buffer, middle fragments
# extend it, the E fragment completes it and the delegate sees the whole message once, with the
# header of the last fragment.  Unfragmented (B|E) messages pass straight through without a copy.
# A fragment without B and no buffer in progress (a late join mid-message) is dropped.
"""`FragmentAssembler` and `ControlledFragmentAssembler`."""

from __future__ import annotations

from .codes import BEGIN_FLAG, END_FLAG, UNFRAGMENTED, Action
from .header import Header
from .image import ControlledFragmentHandler, FragmentHandler


class _Buffers:
    def __init__(self) -> None:
        self.by_session: dict[int, bytearray] = {}

    def feed(self, buffer: memoryview, header: Header) -> memoryview | None:
        flags = header.flags
        session = header.session_id
        if flags & BEGIN_FLAG:
            self.by_session[session] = bytearray(buffer)
            return None
        acc = self.by_session.get(session)
        if acc is None:
            return None
        acc += buffer
        if flags & END_FLAG:
            del self.by_session[session]
            return memoryview(acc)
        return None


class FragmentAssembler:
    """Wraps a fragment handler so it only ever sees whole messages."""

    def __init__(self, delegate: FragmentHandler) -> None:
        self.delegate = delegate
        self._buffers = _Buffers()

    def on_fragment(self, buffer: memoryview, header: Header) -> None:
        """The fragment handler to pass to poll."""
        if header.flags & UNFRAGMENTED == UNFRAGMENTED:
            self.delegate(buffer, header)
            return
        whole = self._buffers.feed(buffer, header)
        if whole is not None:
            self.delegate(whole, header)

    __call__ = on_fragment

    def free_session_buffer(self, session_id: int) -> None:
        """Drop a partial message of `session_id` (e.g. when its image goes away)."""
        self._buffers.by_session.pop(session_id, None)


class ControlledFragmentAssembler:
    """Controlled variant: ABORT on the last fragment keeps the partial message for redelivery."""

    def __init__(self, delegate: ControlledFragmentHandler) -> None:
        self.delegate = delegate
        self._buffers: dict[int, bytearray] = {}

    def on_fragment(self, buffer: memoryview, header: Header) -> Action:
        """The controlled fragment handler to pass to controlled_poll."""
        flags = header.flags
        if flags & UNFRAGMENTED == UNFRAGMENTED:
            return self.delegate(buffer, header)
        session = header.session_id
        if flags & BEGIN_FLAG:
            self._buffers[session] = bytearray(buffer)
            return Action.CONTINUE
        acc = self._buffers.get(session)
        if acc is None:
            return Action.CONTINUE
        if not flags & END_FLAG:
            acc += buffer
            return Action.CONTINUE
        whole = bytes(acc) + bytes(buffer)
        action = self.delegate(memoryview(whole), header)
        if action != Action.ABORT:
            del self._buffers[session]
        return action

    __call__ = on_fragment
