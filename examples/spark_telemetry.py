"""Telemetry aggregated by Spark Structured Streaming, in and out of Aqueduct channels.

A hub serves topics: `subscribe` (a Sender for the feed, resumable from a
message count) and `publish` (a Receiver whose messages are appended). A
producer streams the demo's telemetry samples ({"cpu", "t"}) into topic
"telemetry" over an unreliable lane, as `aqueduct demo` does. Spark reads
that topic with the `aqueduct` stream source, aggregates 1-second windows
(samples, mean and max cpu) and writes each closed window with the
`aqueduct` sink into topic "telemetry-1s", which a client subscribes to and
prints. Hub, producer and printer share an event loop on a thread; Spark
runs in the main thread.

Windows are printed in order. Spark closes them as the watermark advances, so
a micro-batch never holds a window older than one an earlier batch held; but
within a batch its rows come in hash-partition order, and append mode cannot
sort a streaming aggregate (only complete mode can). So the hub applies a
committed batch of a topic it is told to order (`Hub(order_by=...)`) sorted by
that field, here the window's start. Spark stops without PySpark's
accumulator-server EOFError traceback (`quiet_accumulator_eof`).

    .venv/bin/python examples/spark_telemetry.py [--seconds 90] [--windows N]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import exit_with

import aqueduct
from aqueduct.quic.certs import make_dev_certs
from aqueduct.spark.session import spark_session
from aqueduct.spark.stream import register


class Hub:
    """Topics as lists; subscribers follow a topic from any count; publishers append to it. A committed batch of
    a topic in `order_by` is applied sorted by that topic's field (a batch is a set: its order means nothing)."""

    def __init__(self, order_by: dict[str, str] | None = None) -> None:
        self.order_by = order_by or {}
        self.topics: dict[str, list[Any]] = {}
        self.committed: set[tuple[str, str, int]] = set()
        self.changed = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def append(self, topic: str, item: Any) -> None:
        self.topics.setdefault(topic, []).append(item)
        self.changed.set()
        self.changed = asyncio.Event()

    async def connection(self, conn: aqueduct.Connection[aqueduct.Receiver[Any]]) -> None:
        try:
            async for req in conn.entrypoint:
                self.spawn(self.request(req))
        except aqueduct.AqueductError:
            pass

    async def request(self, req: dict[str, Any]) -> None:
        try:
            if req["op"] == "subscribe":
                i = req["from"]
                while True:
                    items = self.topics.get(req["topic"], [])
                    while i < len(items):
                        await req["updates"].send(items[i])
                        i += 1
                    await self.changed.wait()
            elif req["op"] == "publish" and "done" in req:  # the Spark sink: a batch, committed once by its id
                rows = [row async for row in req["rows"]]
                key = (req["sink"], req["topic"], req["batch_id"])
                applied = key not in self.committed
                if applied:
                    self.committed.add(key)
                    if req["topic"] in self.order_by:
                        rows.sort(key=lambda row: row[self.order_by[req["topic"]]])
                    for row in rows:
                        self.append(req["topic"], row)
                async with req["done"] as done:
                    await done.send({"batch_id": req["batch_id"], "applied": applied})
            elif req["op"] == "publish":  # a live lane: rows as they come
                async for item in req["rows"]:
                    self.append(req["topic"], item)
        except aqueduct.AqueductError:
            pass


async def producer(url: str, ca: Path, stop: asyncio.Event) -> None:
    """The demo's telemetry lane: unreliable samples, every 10 ms."""
    async with aqueduct.connect(url, ca=ca) as conn:
        lane_tx, lane_rx = aqueduct.channel(mode="unreliable")
        await conn.entrypoint.send({"op": "publish", "topic": "telemetry", "batch_id": -1, "rows": lane_rx})
        i = 0
        while not stop.is_set():
            await lane_tx.send({"cpu": round(50 + 45 * math.sin(i / 40), 1), "t": time.time()})
            i += 1
            await asyncio.sleep(0.01)


async def printer(url: str, ca: Path, windows: int, enough: threading.Event) -> None:
    """Subscribe to the aggregated topic and print each window; set `enough` after `windows` of them (0: never)."""
    async with aqueduct.connect(url, ca=ca) as conn:
        tx, rx = aqueduct.channel()
        await conn.entrypoint.send({"op": "subscribe", "topic": "telemetry-1s", "from": 0, "updates": tx})
        printed = 0
        async for w in rx:
            print(f"  window {w['second']}: {w['samples']:3d} samples, cpu mean {w['cpu_mean']:5.1f}, "
                  f"max {w['cpu_max']:5.1f}", flush=True)  # fmt: skip
            printed += 1
            if printed == windows:
                enough.set()


def quiet_accumulator_eof(spark: Any) -> None:
    """No traceback when the JVM closes PySpark's accumulator-update connection (as it stops, or as a streaming
    query ends): the server's handler reads it, gets EOFError, and socketserver prints that. Harmless (every
    update was read), so an EOFError is dropped; any other error is still reported."""
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is None:
        return
    report = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], EOFError):
            report(request, client_address)

    server.handle_error = handle_error


def main() -> None:
    parser = argparse.ArgumentParser(description="Spark streaming over Aqueduct channels")
    parser.add_argument("--seconds", type=float, default=90.0, help="stream this long at most")
    parser.add_argument("--windows", type=int, default=0, help="stop after this many windows (default 0: --seconds)")
    args = parser.parse_args()
    enough = threading.Event()
    with tempfile.TemporaryDirectory(prefix="aqueduct-spark-telemetry-") as tmp:
        certs = make_dev_certs(tmp)
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True).start()
        started: asyncio.Future[str] = loop.create_future()
        stop = asyncio.Event()

        async def services() -> None:
            hub = Hub(order_by={"telemetry-1s": "start"})
            async with aqueduct.serve("127.0.0.1", 0, cert=certs.cert, key=certs.key) as server:
                host, port = server.address
                url = f"aqueduct://{host}:{port}"

                async def accept() -> None:
                    async for conn in server:
                        hub.spawn(hub.connection(conn))

                tasks = [
                    asyncio.ensure_future(t)
                    for t in (accept(), producer(url, certs.ca, stop), printer(url, certs.ca, args.windows, enough))
                ]
                started.set_result(url)
                await stop.wait()
                for t in [*tasks, *hub.tasks]:
                    t.cancel()
                await asyncio.gather(*tasks, *hub.tasks, return_exceptions=True)

        done = asyncio.run_coroutine_threadsafe(services(), loop)
        url = asyncio.run_coroutine_threadsafe(asyncio.wait_for(asyncio.shield(started), 30), loop).result()
        print(f"hub on {url}; starting Spark (about 10 s) ...", flush=True)
        spark = spark_session(
            app_name="aqueduct-telemetry", config={"spark.sql.shuffle.partitions": "2"}, jvm_log=f"{tmp}/spark.log"
        )
        register(spark)
        quiet_accumulator_eof(spark)
        from pyspark.sql import functions as F

        samples = (
            spark.readStream.format("aqueduct").option("url", url).option("ca", str(certs.ca))
            .option("topic", "telemetry").option("spool", f"{tmp}/spool").load()
            .select(F.from_json("value", "cpu DOUBLE, t DOUBLE").alias("s"))
            .select(F.timestamp_seconds(F.col("s.t")).alias("ts"), F.col("s.cpu").alias("cpu"))
        )  # fmt: skip
        windows = (
            samples.withWatermark("ts", "1 second")
            .groupBy(F.window("ts", "1 second"))
            .agg(F.count(F.lit(1)).alias("samples"), F.avg("cpu").alias("cpu_mean"), F.max("cpu").alias("cpu_max"))
            .select(F.date_format("window.start", "HH:mm:ss").alias("second"),
                    F.col("window.start").cast("long").alias("start"), "samples", "cpu_mean", "cpu_max")
        )  # fmt: skip
        query = (
            windows.writeStream.format("aqueduct").outputMode("append").option("url", url)
            .option("ca", str(certs.ca)).option("topic", "telemetry-1s").option("ledger", f"{tmp}/ledger")
            .option("checkpointLocation", f"{tmp}/checkpoint").trigger(processingTime="1 second").start()
        )  # fmt: skip
        print(
            f"streaming for {args.seconds:.0f} s: telemetry -> Spark 1-second windows -> channel -> printer "
            "(the first micro-batch warms up the JVM and Python workers: windows appear after it)",
            flush=True,
        )
        try:
            deadline = time.monotonic() + args.seconds
            while not enough.is_set() and time.monotonic() < deadline:
                if query.awaitTermination(1):  # True once the query ended; raises if it failed
                    break
        finally:
            query.stop()
            spark.stop()
            loop.call_soon_threadsafe(stop.set)
            done.result(timeout=30)


if __name__ == "__main__":
    exit_with(main)
