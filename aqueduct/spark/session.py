"""A SparkSession that works out of the box on a laptop and unchanged on a cluster.

`spark_session(master)` sets the environment a PySpark driver needs before
its JVM starts (loopback bind for local masters, the running Python for
workers), checks that a Java runtime exists and says what to install if
not, turns the UI and console progress bars off and quiets log4j to errors.
Under `spark-submit` (PYSPARK_GATEWAY_PORT is set) the JVM already exists:
the master and deploy settings come from spark-submit and are not touched.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
SETTLE_S = 10.0
"""How long `stop_session` lets leftover jobs finish before cancelling them."""
KILL_S = 10.0
"""How long `stop_session` then waits for the cancelled tasks to end (a Python worker is killed after 2 s)."""
MIN_JAVA = 17
INSTALL_HINT = (
    "install a Java runtime (17 or 21), e.g. `sudo apt-get install openjdk-17-jre-headless` on Debian/Ubuntu, "
    "`sudo dnf install java-17-openjdk-headless` on Fedora, `brew install openjdk@17` on macOS, "
    "then make sure `java` is on PATH or JAVA_HOME points at it"
)
_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


NO_PERF_DATA = "-XX:-UsePerfData"
"""The driver JVM's option that keeps it from writing /tmp/hsperfdata_USER (jstat's files, left behind)."""


@functools.cache
def scratch_dir() -> Path:
    """This process's private directory for Spark (mkdtemp, removed at exit or by `remove_scratch`): `conf/`, the
    SPARK_CONF_DIR, and `tmp/`, the driver JVM's java.io.tmpdir and spark.local.dir (its spark-*, blockmgr-*,
    artifacts-* directories and the native libraries it unpacks), which a JVM would otherwise put in /tmp and
    leave there whenever it is not shut down cleanly."""
    reclaim_stale_scratch()
    path = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    (path / "conf").mkdir()
    (path / "conf" / "log4j2.properties").write_text(_LOG4J)
    (path / "tmp").mkdir()
    atexit.register(remove_scratch)
    return path


SCRATCH_PREFIX = "aqueduct-spark-"
"""A scratch directory's name: this prefix, the owning process's pid, a dash and mkdtemp's random part."""


def reclaim_stale_scratch() -> list[Path]:
    """Remove the scratch directories whose process is gone: one killed (SIGKILL, a crash) never ran its atexit,
    so the next Spark process of this user (and the test suite at its end) removes what it left. A directory of
    another user, or whose name carries no pid, is left alone. Returns what it removed."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        pid = path.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        try:
            if not pid.isdigit() or path.lstat().st_uid != os.getuid() or not path.is_dir() or path.is_symlink():
                continue
            os.kill(int(pid), 0)  # (alive: its owner removes it)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        except OSError:  # (PermissionError: a live process of another user)
            continue
    return removed


def remove_scratch() -> None:
    """Remove this process's Spark scratch directory (once its session is stopped; a later session makes anew)."""
    if scratch_dir.cache_info().currsize:
        shutil.rmtree(scratch_dir(), ignore_errors=True)
        scratch_dir.cache_clear()


def _driver_options() -> str:
    """The driver JVM's options: no perf data files, its temporary files in this process's scratch directory."""
    return f"{NO_PERF_DATA} -Djava.io.tmpdir={scratch_dir() / 'tmp'}"


class JavaMissing(RuntimeError):
    """No usable Java runtime for Spark."""


def under_spark_submit() -> bool:
    """Whether this Python was started by spark-submit (its JVM is already running)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session_running() -> bool:
    """Whether this process has a running SparkContext already (a notebook's, a test's): `spark_session` then
    returns a session on it, and its owner, not the caller, stops it."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def find_java() -> tuple[str, int]:
    """The java executable and its major version; JavaMissing with an install hint otherwise."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        where = f"JAVA_HOME={home} has no bin/java" if home else "no `java` on PATH and JAVA_HOME is unset"
        raise JavaMissing(f"Spark needs Java, but {where}: {INSTALL_HINT}")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaMissing(f"`{java} -version` failed ({exc}): {INSTALL_HINT}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        raise JavaMissing(f"cannot tell the version of {java} from {out.strip()!r}: {INSTALL_HINT}")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" style
        major = int(match.group(2))
    if major < MIN_JAVA:
        raise JavaMissing(f"{java} is Java {major}; Spark 4 needs Java {MIN_JAVA} or newer: {INSTALL_HINT}")
    return java, major


def _is_loopback_master(master: str) -> bool:
    return master.startswith("local") or bool(re.match(r"spark://(127\.0\.0\.1|localhost)[:/]", master))


def prepare_environment(master: str) -> None:
    """Environment variables the driver and its workers need (existing values win)."""
    if _is_loopback_master(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_CONF_DIR", str(scratch_dir() / "conf"))


@contextlib.contextmanager
def _stderr_to(path: str | None) -> Iterator[None]:
    """Point fd 2 at `path` while a JVM is spawned, so the JVM's own stderr goes there (Python's is restored)."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def spark_session(
    master: str | None = None,
    app_name: str = "aqueduct",
    config: dict[str, str] | None = None,
    jvm_log: str | None = None,
) -> SparkSession:
    """A quiet SparkSession on `master` (default local[*]), or the spark-submit one.

    `jvm_log`: a file that receives the JVM's stderr (its startup chatter and error logs) when this call starts it.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if not under_spark_submit():
        master = master or os.environ.get("AQUEDUCT_SPARK_MASTER") or DEFAULT_MASTER
        find_java()
        prepare_environment(master)
        builder = builder.master(master)
        if _is_loopback_master(master):
            builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        builder = (builder.config("spark.driver.extraJavaOptions", _driver_options())  # (merged with config= below)
                   .config("spark.local.dir", str(scratch_dir() / "tmp")))
    builder = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", os.environ.get("AQUEDUCT_SPARK_PARTITIONS", "8"))
    )
    for key, value in (config or {}).items():
        if key == "spark.driver.extraJavaOptions" and not under_spark_submit():
            value = f"{_driver_options()} {value}"
        builder = builder.config(key, value)
    with _stderr_to(None if under_spark_submit() else jvm_log):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop_session(spark: SparkSession, settle: float = SETTLE_S) -> None:
    """Stop `spark` once its leftover work has ended (`settle_session`)."""
    settle_session(spark, settle)
    spark.stop()


def settle_session(spark: SparkSession, settle: float = SETTLE_S) -> None:
    """Return once no job or task of `spark` runs (after `settle` seconds the jobs are cancelled).

    A query whose adaptive plan ends early (one side of a join turns out empty) returns its result while a stage
    of the other side still runs, and a cancelled job ends for the status tracker before its tasks have ended;
    stopping under either makes the driver log rejected-task errors and stack traces, which spark-submit shows
    on the console of a run that succeeded. So this waits for the scheduler's running tasks too.
    """
    sc = spark.sparkContext
    tracker = sc.statusTracker()

    def busy() -> bool:
        return bool(tracker.getActiveJobsIds()) or running_tasks(spark) > 0

    def wait(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while busy() and time.monotonic() < deadline:
            time.sleep(0.05)  # polling the scheduler (no event reaches Python); the leftovers end on their own

    wait(settle)
    if busy():
        sc.cancelAllJobs()
        wait(KILL_S)


def running_tasks(spark: SparkSession) -> int:
    """Tasks the driver's scheduler launched and has not yet heard end, a cancelled stage's included."""
    sc = spark.sparkContext
    jvm, jsc = sc._jvm, sc._jsc  # (py4j's views of the driver, set while the context runs)
    assert jvm is not None and jsc is not None, "the Spark session is stopped"
    scheduler = jsc.sc().taskScheduler()
    by_executor = jvm.scala.collection.JavaConverters.mapAsJavaMapConverter(scheduler.runningTasksByExecutors())
    return sum(int(n) for n in by_executor.asJava().values())
