"""`aqueduct analyze --master spark://...` against a real standalone master and worker started from pyspark.

The master and worker are the installed pyspark's own JVMs (bin/spark-class),
bound to 127.0.0.1 on free ports, each in its own process group that is
killed at teardown whatever happened.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pyspark
import pytest

from aqueduct.recording import read_events
from aqueduct.recording.synthetic import SyntheticSpec, generate

from . import expected

pytestmark = pytest.mark.requires_system("java")

SPARK_HOME = Path(pyspark.__file__).parent
START_TIMEOUT = 90.0
FAST_JVM = "-XX:TieredStopAtLevel=1 -Xshare:auto"
"""Short-lived test JVMs start faster with only the C1 compiler (tests only; real runs keep C2)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(condition: Callable[[], bool], what: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not condition():
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {START_TIMEOUT} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)  # polling a readiness condition, not synchronising on time


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as resp:
            return int(json.load(resp).get("aliveworkers", 0))
    except OSError:
        return 0


def _env(conf_dir: Path) -> dict[str, str]:
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    env["SPARK_CONF_DIR"] = str(conf_dir)
    env["JAVA_TOOL_OPTIONS"] = FAST_JVM
    return env


def _kill(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("cluster")
    (base / "conf").mkdir()
    (base / "conf" / "log4j2.properties").write_text("rootLogger.level = warn\n")
    env = _env(base / "conf")
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, ui, wport, wui = (_free_port() for _ in range(4))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        mlog = base / "master.log"
        with open(mlog, "wb") as out:
            master = subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(ui)],
                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        procs.append(master)
        _wait_for(lambda: _alive_workers(ui) >= 0 and _port_open(ui), "master", master, mlog)
        url = f"spark://127.0.0.1:{port}"
        wlog = base / "worker.log"
        with open(wlog, "wb") as out:
            worker = subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--port", str(wport), "--webui-port", str(wui), "--cores", "2", "--memory", "2g",
                 "--work-dir", str(base / "work"), url],
                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        procs.append(worker)
        _wait_for(lambda: _alive_workers(ui) >= 1, "worker registration", worker, wlog)
        yield url
    finally:
        for proc in reversed(procs):
            _kill(proc)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_analyze_on_a_standalone_cluster(cluster: str, tmp_path: Path) -> None:
    recording = tmp_path / "rec"
    generate(recording, SyntheticSpec(connections=2, channels=4, messages=200, loss=0.1, seed=3))
    out = tmp_path / "out"
    env = dict(os.environ, JAVA_TOOL_OPTIONS=FAST_JVM)
    env.pop("SPARK_LOCAL_IP", None)  # the analyze command must set what it needs itself
    command = Path(sys.executable).with_name("aqueduct")
    result = subprocess.run(
        [str(command), "analyze", str(recording), "--master", cluster, "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    log = out / "spark.log"
    assert result.returncode == 0, result.stderr[-3000:] + (log.read_text()[-3000:] if log.exists() else "")
    assert f"master {cluster}" in result.stderr
    assert "[8/8] both sides paired per channel" in result.stderr
    assert "Per delivery mode" in result.stdout
    want = expected.flows(read_events(recording))
    got = pq.read_table(out / "flows.parquet").to_pylist()
    assert {(r["connection"], r["channel"], r["delivery"], r["direction"]): (r["messages"], r["bytes"], r["nacked"])
            for r in got} == {k: (w["messages"], w["bytes"], w["nacked"]) for k, w in want.items()}  # fmt: skip
    assert (out / "throughput.png").exists() and (out / "latency.png").exists()
