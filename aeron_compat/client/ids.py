# Registration and correlation ids: unique within the process, so images, subscriptions and
# publications of every driver in it can be told apart (and response channels can name them).
"""Process-wide ids."""

from __future__ import annotations

import itertools

_ids = itertools.count(1)


def next_correlation_id() -> int:
    """A fresh id."""
    return next(_ids)
