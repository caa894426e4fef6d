"""A peer's `schema` header is hostile input (issue 26 item 3): its nesting is measured before it is parsed, by a
linear scan that agrees with the real depth of any JSON document, and a refusal is a reason, never an exception
(a 200 KB `[[[...]]]` once raised RecursionError out of the datagram callback)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aqueduct.api.schema import DEFAULT_MAX_DEPTH, canonical, check_peer, nesting_exceeds

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\ab'), inner, max_size=3),
    max_leaves=30,
)


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


@given(json_values, st.integers(0, 8))
def test_the_scan_agrees_with_the_parsed_depth(value: Any, limit: int) -> None:
    """Brackets inside strings (escaped quotes too) do not count."""
    assert nesting_exceeds(json.dumps(value).encode(), limit) == (depth(value) > limit)


@pytest.mark.parametrize("mode", ["exact", "compatible"])
@pytest.mark.parametrize("theirs", [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
                                    b"[" * 100_000])
def test_a_deep_schema_is_refused_with_a_reason(mode: Any, theirs: bytes) -> None:
    why = check_peer(canonical(int), theirs, mode)
    assert why is not None and f"nests deeper than {DEFAULT_MAX_DEPTH}" in why


def test_depth_at_the_cap_is_compared_as_usual() -> None:
    at_cap = b"[" * DEFAULT_MAX_DEPTH + b"]" * DEFAULT_MAX_DEPTH
    why = check_peer(canonical(int), at_cap, "exact")
    assert why is not None and "first difference" in why
    assert check_peer(at_cap, at_cap, "exact") is None
