"""Shared fixtures: an Aeron client with an embedded driver, closed after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aeron_compat import Aeron, Context


@pytest.fixture
def aeron() -> Iterator[Aeron]:
    with Aeron.connect(Context(counters_interval=0, udp_media="loopback")) as client:
        yield client


@pytest.fixture
def aeron2() -> Iterator[Aeron]:
    with Aeron.connect(Context(counters_interval=0, udp_media="loopback")) as client:
        yield client
