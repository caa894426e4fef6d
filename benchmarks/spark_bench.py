"""Time `aqueduct analyze` on synthetic recordings of a given size, with peak memory.

For each size (events) it generates a recording (connections x channels x
messages with loss, see aqueduct/recording/synthetic.py), then, in a fresh
child process per size, starts Spark, runs the analysis twice (cold, then
warm: the second run shows the cost without JIT warm-up) and reports the
driver JVM's peak RSS (VmHWM; in local mode the executors live in it) and
the Python process's peak RSS. One JSON line per size, then a table.

    .venv/bin/python benchmarks/spark_bench.py --events 1000000 10000000
    .venv/bin/python benchmarks/spark_bench.py --events 1000000 --master spark://127.0.0.1:7077
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _spec_for(events: int, loss: float) -> object:
    from aqueduct.recording.synthetic import SyntheticSpec

    connections, channels = 10, 20
    # even channels: sent + outcome rows (2 per message); odd channels: received rows (1 per message)
    messages = max(1, round(events / (connections * channels * 1.5)))
    return SyntheticSpec(connections=connections, channels=channels, messages=messages, loss=loss, seed=1)


def _peak_rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of a process so far (robust to a busy machine, unlike wall time)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_one(recording: str, master: str | None, driver_memory: str | None, jit: str) -> dict[str, object]:
    """Start Spark and analyze `recording` twice; timings and peak memory."""
    from aqueduct.spark.analyze import QUICK_JIT, analyze
    from aqueduct.spark.session import spark_session

    config = {"spark.driver.memory": driver_memory} if driver_memory else {}
    if jit == "quick":
        config.update({f"spark.{role}.extraJavaOptions": QUICK_JIT for role in ("driver", "executor")})
    t0 = time.perf_counter()
    spark = spark_session(master, app_name="aqueduct-bench", config=config, jvm_log=os.devnull)
    started = time.perf_counter() - t0
    gateway = spark.sparkContext._gateway
    jvm_pid = gateway.proc.pid if gateway is not None and getattr(gateway, "proc", None) else None
    c1, t1 = _cpu_s(jvm_pid), time.perf_counter()
    tables = analyze(spark, recording)
    c2, t2 = _cpu_s(jvm_pid), time.perf_counter()
    analyze(spark, recording)
    c3, t3 = _cpu_s(jvm_pid), time.perf_counter()
    cold, warm = t2 - t1, t3 - t2
    jvm_peak = _peak_rss_kib(jvm_pid) if jvm_pid else None
    spark.stop()
    return {
        "events": tables["summary"]["events"][0].as_py(),
        "spark_start_s": round(started, 1),
        "analyze_cold_s": round(cold, 1),
        "analyze_warm_s": round(warm, 1),
        "jvm_cpu_cold_s": round(c2 - c1, 1),
        "jvm_cpu_warm_s": round(c3 - c2, 1),
        "load_avg_1m": os.getloadavg()[0],
        "jvm_peak_rss_mib": round(jvm_peak / 1024) if jvm_peak else None,
        "python_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "master": master or "local[*]",
        "jit": jit,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--loss", type=float, default=0.01)
    parser.add_argument("--master", default=None)
    parser.add_argument("--driver-memory", default=None, help="e.g. 4g (local mode: the whole job's heap)")
    parser.add_argument("--jit", choices=["quick", "full"], default="full", help="see `aqueduct analyze --jit`")
    parser.add_argument("--dir", default=None, help="where recordings go (default: a temp dir, removed after)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.master, args.driver_memory, args.jit)), flush=True)
        return 0

    from aqueduct.recording.synthetic import generate

    base = Path(args.dir or tempfile.mkdtemp(prefix="aqueduct-spark-bench-"))
    results = []
    try:
        for events in args.events:
            rec = base / f"rec-{events}"
            shutil.rmtree(rec, ignore_errors=True)
            t = time.perf_counter()
            n = generate(rec, _spec_for(events, args.loss))  # type: ignore[arg-type]
            gen_s = time.perf_counter() - t
            size = sum(p.stat().st_size for p in rec.iterdir())
            cmd = [sys.executable, __file__, "--child", str(rec), "--jit", args.jit]
            cmd += ["--master", args.master] if args.master else []
            cmd += ["--driver-memory", args.driver_memory] if args.driver_memory else []
            out = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                print(out.stderr[-3000:], file=sys.stderr)
                return 1
            result = json.loads(out.stdout.strip().splitlines()[-1])
            result.update(generated_events=n, generate_s=round(gen_s, 1), parquet_mib=round(size / 2**20, 1))
            print(json.dumps(result), flush=True)
            results.append(result)
            if not args.dir:
                shutil.rmtree(rec, ignore_errors=True)
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    cols = ["events", "jit", "parquet_mib", "spark_start_s", "analyze_cold_s", "analyze_warm_s", "jvm_cpu_cold_s",
            "jvm_cpu_warm_s", "jvm_peak_rss_mib", "load_avg_1m"]  # fmt: skip
    print("  ".join(cols))
    for r in results:
        print("  ".join(str(r[c]).rjust(len(c)) for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
