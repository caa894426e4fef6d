"""Harnesses the tests and the long runs drive; users do not call them, so the library does not ship them.

fuzzing.py: byte-driven programs for the decoders and for the engine as a malicious peer (hypothesis
in tests/fuzz, atheris in tests/fuzz/atheris_*.py and benchmarks/fuzz_long.py).  traffic.py:
`TreeTraffic`, random channel trees over real connections (every delivery mode, finish, cancel, early
close), recorded into the one ledger (`aqueduct.testing.ledger`) and checked there (tests/reliability,
benchmarks/soak.py).  The impairment proxy they run through is the library's
(`aqueduct.testing.impair`: `aqueduct bench --loss-curves` measures through it).
Tests import these as `harness.<module>` (tests/ is on pytest's path; the scripts put it there).
"""
