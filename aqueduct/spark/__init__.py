"""Spark jobs over recordings (needs the `spark` extra: pyspark, pyarrow, matplotlib, and a Java runtime).

`session.py` builds a quiet SparkSession for local mode or a cluster,
`analyze.py` is the `aqueduct analyze` job, `charts.py` draws its PNGs.
"""
