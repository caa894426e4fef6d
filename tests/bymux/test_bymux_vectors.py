"""Run every case of specs/vectors/bymux.json against the sans-I/O endpoint."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from aeron_compat.bymux import ConnectionTerminated, Endpoint, Event, Rule

VECTORS = json.loads((Path(__file__).resolve().parents[2] / "specs" / "vectors" / "bymux.json").read_text())["vectors"]


def _arg(value: Any) -> Any:
    return bytes.fromhex(value[4:]) if isinstance(value, str) and value.startswith("hex:") else value


def _event(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"event": type(event).__name__}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        out[f.name] = value.hex() if isinstance(value, bytes) else value
    return out


def _drain(endpoint: Endpoint) -> list[dict[str, Any]]:
    events = []
    while (event := endpoint.next_event()) is not None:
        events.append(_event(event))
    return events


def _assert_subset(expected: Any, actual: Any, where: str) -> None:
    if isinstance(expected, dict):
        for key, value in expected.items():
            assert key in actual, f"{where}.{key} missing"
            _assert_subset(value, actual[key], f"{where}.{key}")
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def test_enough_vectors_and_every_rule_covered() -> None:
    assert len(VECTORS) >= 40
    rules = {case["expect"]["terminated"] for case in VECTORS if "terminated" in case["expect"]}
    assert rules == {rule.value for rule in Rule}


@pytest.mark.parametrize("case", VECTORS, ids=[case["name"] for case in VECTORS])
def test_vector(case: dict[str, Any]) -> None:
    endpoint = Endpoint(case["role"] == "initiator", **case["config"])
    for step in case["script"]:
        if "receive" in step:
            endpoint.receive_data(bytes.fromhex(step["receive"]))
        else:
            getattr(endpoint, step["call"])(*map(_arg, step.get("args", [])))
    endpoint.data_to_send()
    _drain(endpoint)
    expect = case["expect"]
    data = bytes.fromhex(case["input"])
    if "terminated" in expect:
        with pytest.raises(ConnectionTerminated) as info:
            endpoint.receive_data(data)
        assert info.value.rule.value == expect["terminated"]
        assert expect["terminated"] in str(info.value)
        assert endpoint.closed
        with pytest.raises(ConnectionTerminated):
            endpoint.receive_data(b"")
        assert endpoint.data_to_send() == b""
        return
    endpoint.receive_data(data)
    assert endpoint.data_to_send().hex() == expect["reply"]
    assert not endpoint.closed
    _assert_subset(expect.get("state", {}), endpoint.summary(), "state")
    if "active" in expect:
        assert endpoint.stream_ids == expect["active"]
    events = _drain(endpoint)
    if "events" in expect:
        assert events == expect["events"]
