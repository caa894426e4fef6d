"""How scripts/test.sh's run is spread over its workers (tests/scheduling.py)."""

from __future__ import annotations

import math
from typing import Any

from tests.scheduling import DURATIONS, SEED, LongestFileFirst, file_seconds, read_seed, unit_seconds


class _Cache:
    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def get(self, key: str, default: Any) -> Any:
        return self.values.get(key, default)


class _Config:
    """What the scheduler reads of pytest's config: two workers (`-n 2`) and the cache."""

    def __init__(self, seconds: dict[str, float]) -> None:
        self.cache = _Cache({DURATIONS: seconds})
        self.option = type("Options", (), {"tx": ["2*popen"], "dist": "loadfile", "loadscopereorder": True})

    def getvalue(self, name: str) -> Any:
        return getattr(self.option, name)


class _Worker:
    def __init__(self, name: str, handed: list[list[int]]) -> None:
        self.gateway = type("Gateway", (), {"id": name})
        self.shutting_down = False
        self.handed = handed

    def send_runtest_some(self, indices: list[int]) -> None:
        self.handed.append(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


COLLECTION = [
    "tests/a/test_many.py::t1", "tests/a/test_many.py::t2", "tests/a/test_many.py::t3",
    "tests/b/test_jvm.py::t1",
    "tests/c/test_mid.py::t1", "tests/c/test_mid.py::t2",
    "tests/d/test_new.py::t1",
    "tests/docs/test_browser.py::t1", "tests/docs/test_site.py::t1",
]  # fmt: skip


def _files_handed_out(seconds: dict[str, float], seed: dict[str, float] | None = None) -> list[str]:
    """The files in the order the scheduler hands them to two workers that run every test they get (a unit's
    files joined by +)."""
    sched = LongestFileFirst(_Config(seconds))  # type: ignore[arg-type]
    sched.seed = seed or {}  # (the committed seed names real files only; these runs pretend it is empty or this)
    handed: list[list[int]] = []
    workers = [_Worker("gw0", handed), _Worker("gw1", handed)]
    for w in workers:
        sched.add_node(w)  # type: ignore[arg-type]
        sched.add_node_collection(w, COLLECTION)  # type: ignore[arg-type]
    sched.schedule()
    ran = 0
    while ran < len(handed):  # the workers run what they got, in the order it was handed out
        for i in handed[ran]:
            owner = next(w for w in workers if sched._split_scope(COLLECTION[i]) in sched.assigned_work[w])  # type: ignore[index]
            sched.mark_test_complete(owner, i)  # type: ignore[arg-type]
        ran += 1
    assert sched.tests_finished
    return [" + ".join(sorted({COLLECTION[i].split("::")[0] for i in indices})) for indices in handed]


def test_the_longest_file_is_handed_out_first_and_unmeasured_ones_before_all() -> None:
    seconds = {
        "tests/a/test_many.py::t1": 0.1, "tests/a/test_many.py::t2": 0.1, "tests/a/test_many.py::t3": 0.2,
        "tests/b/test_jvm.py::t1": 30.0,
        "tests/c/test_mid.py::t1": 2.0, "tests/c/test_mid.py::t2": 3.0,
        "tests/docs/test_browser.py::t1": 4.0, "tests/docs/test_site.py::t1": 20.0,
    }  # fmt: skip
    assert _files_handed_out(seconds) == [
        "tests/d/test_new.py", "tests/b/test_jvm.py", "tests/docs/test_browser.py + tests/docs/test_site.py",
        "tests/c/test_mid.py", "tests/a/test_many.py",
    ]  # fmt: skip


def test_without_a_cache_the_committed_seed_orders_the_files_and_a_new_file_goes_first() -> None:
    seed = {"tests/a/test_many.py": 1, "tests/b/test_jvm.py": 40, "tests/c/test_mid.py": 5, "the built site": 20.0}
    assert _files_handed_out({}, seed) == [
        "tests/d/test_new.py", "tests/b/test_jvm.py", "tests/docs/test_browser.py + tests/docs/test_site.py",
        "tests/c/test_mid.py", "tests/a/test_many.py",
    ]  # fmt: skip


def test_the_seed_is_per_work_unit_and_the_committed_one_reads() -> None:
    seconds = {"tests/a/test_x.py::t1": 1.25, "tests/a/test_x.py::t2": 2.0, "tests/docs/test_site.py::t": 3.0}
    assert unit_seconds(seconds) == {"tests/a/test_x.py": 3.2, "the built site": 3.0}
    seed = read_seed(SEED)
    assert seed and all(s >= 0 for s in seed.values())
    assert read_seed(SEED.with_name("no-such-seed.json")) == {}


def test_without_measurements_the_order_is_pytest_xdists_most_tests_first() -> None:
    assert _files_handed_out({}) == [
        "tests/a/test_many.py", "tests/c/test_mid.py", "tests/docs/test_browser.py + tests/docs/test_site.py",
        "tests/b/test_jvm.py", "tests/d/test_new.py",
    ]  # fmt: skip


def test_a_files_seconds_are_its_measured_tests() -> None:
    assert file_seconds(["x::a", "x::b"], {"x::a": 1.5}) == 1.5
    assert file_seconds(["x::a"], {}) == math.inf
