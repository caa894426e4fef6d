"""Suite-wide test settings.

Hypothesis: no per-example deadline (tests never judge wall time, and a
loaded 2-core machine makes deadlines flaky). Under CI (CI=true) the
examples are derandomized so a CI run is reproducible; local runs explore
fresh examples each time.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("aqueduct", deadline=None)
settings.register_profile("aqueduct-ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("aqueduct-ci" if os.environ.get("CI") else "aqueduct")
