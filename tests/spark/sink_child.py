"""A streaming query from the `aqueduct` source to the `aqueduct` sink, run until killed (test_sink_crash.py).

argv: url, CA path, base directory (spool, ledger, checkpoint live there).
"""

from __future__ import annotations

import sys

from aqueduct.spark.session import spark_session
from aqueduct.spark.stream import register


def main(url: str, ca: str, base: str) -> None:
    quick = {f"spark.{r}.extraJavaOptions": "-XX:TieredStopAtLevel=1" for r in ("driver", "executor")}
    spark = spark_session("local[1]", app_name="aqueduct-sink-child", config=quick)
    register(spark)
    stream = (
        spark.readStream.format("aqueduct").option("url", url).option("ca", ca).option("topic", "telemetry")
        .option("spool", f"{base}/spool").load()
    )  # fmt: skip
    query = (
        stream.selectExpr("offset", "value").writeStream.format("aqueduct").option("url", url).option("ca", ca)
        .option("topic", "copy").option("ledger", f"{base}/ledger").option("checkpointLocation", f"{base}/checkpoint")
        .trigger(processingTime="200 milliseconds").start()
    )  # fmt: skip
    print("started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:4])
