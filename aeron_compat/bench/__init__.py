"""aeron_compat's rows in `aqueduct bench`, found through the entry point group `aqueduct.bench`.

aqueduct imports nothing of aeron_compat, so the benchmark suite finds the transports built here through
the entry points pyproject.toml declares (aqueduct/bench/extras.py says how); each module here is one row
and may import both packages. marlin.py: the "marlin stream" row (Marlin Stream beside TCP and Aqueduct).
"""
