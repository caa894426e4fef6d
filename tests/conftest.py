"""Suite-wide test settings.

Hypothesis: no per-example deadline (tests never judge wall time, and a
loaded 2-core machine makes deadlines flaky). Under CI (CI=true) the
examples are derandomized so a CI run is reproducible; local runs explore
fresh examples each time.

Fixtures for every folder: `certs` (dev certificates, one set per session),
`io_modules_loaded_by` (which I/O modules an import pulls in) and `chromium`
(Debian's headless Chromium: tests/system_deps.py, scripts/setup-system.sh chromium).

`@pytest.mark.requires_system("java")` on a test or module: the system piece
must be present (tests/system_deps.py: skipped with the enabling command,
failed under AQUEDUCT_REQUIRE_SYSTEM=1).

`@pytest.mark.pure_python` on a test that patches the wire's or the engine's insides (a module function
monkeypatched, a method replaced on one of the engine's parts): compiled modules (aqueduct/native.py) have
no such seams, so it skips when they are in use and runs in CI's AQUEDUCT_PURE=1 pass (.ci/run).

Under `--dist loadfile` the longest test files start first, as measured by
the runs before (tests/scheduling.py); this run's measurements are kept.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from aqueduct.native import compiled
from aqueduct.quic.certs import DevCerts, make_dev_certs
from tests.scheduling import Durations, LongestFileFirst
from tests.system_deps import requires_system

settings.register_profile("aqueduct", deadline=None)
settings.register_profile("aqueduct-ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("aqueduct-ci" if os.environ.get("CI") else "aqueduct")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requires_system(piece): needs scripts/setup-system.sh's PIECE (skip or fail)")
    config.addinivalue_line("markers", "pure_python: patches the engine's insides; runs on the pure-Python modules")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LongestFileFirst | None:
    return LongestFileFirst(config, log) if config.getvalue("dist") == "loadfile" else None  # type: ignore[arg-type]


_durations = Durations()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _durations.add(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    _durations.save(session.config)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("requires_system"):
        requires_system(*mark.args)
    if any(item.iter_markers("pure_python")) and compiled().active:
        pytest.skip("patches the pure-Python modules; compiled ones are in use (CI runs it with AQUEDUCT_PURE=1)")


def _io_modules_loaded_by(names: list[str]) -> str:
    code = (
        "import importlib, sys\n"
        f"for n in {names!r}: importlib.import_module(n)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('asyncio', 'aioquic', 'socket')))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def io_modules_loaded_by() -> Callable[[list[str]], str]:
    """Import the named modules in a fresh interpreter; its printout lists the asyncio/aioquic/socket modules loaded."""
    return _io_modules_loaded_by


@pytest.fixture(scope="session", autouse=True)
def own_user_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The run's own cache, config and state directories, matplotlib's and aeron_compat's base directory, under
    pytest's temporary directory: what the code under test and the programs it starts (Chromium, matplotlib,
    Aeron drivers) keep per user lands there, not in the home directory or /tmp (scripts/leftovers.py checks)."""
    base = tmp_path_factory.mktemp("user-dirs")
    dirs = {"XDG_CACHE_HOME": "cache", "XDG_CONFIG_HOME": "config", "XDG_STATE_HOME": "state",
            "MPLCONFIGDIR": "matplotlib", "AERON_COMPAT_DIR": "aeron_compat"}
    saved = {name: os.environ.get(name) for name in dirs}
    for name, sub in dirs.items():
        (base / sub).mkdir(mode=0o700)
        os.environ[name] = str(base / sub)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> DevCerts:
    """Development certificates (CA, server cert and key) in a temporary directory, made once per session."""
    return make_dev_certs(Path(tmp_path_factory.mktemp("certs")))


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of a headless Chromium (Debian's; `scripts/setup-system.sh chromium` installs it), else a skip."""
    return requires_system("chromium")
