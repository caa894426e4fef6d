"""atheris target: the engine fed a byte-driven program as a malicious peer (see tests/harness/fuzzing.py).

    .venv/bin/python tests/fuzz/atheris_engine.py -max_total_time=600 tests/fuzz/corpus/engine
A crash is an outcome other than normal processing or a coded CloseConnection, or a bound exceeded.
"""

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: harness.fuzzing

with atheris.instrument_imports():
    from harness.fuzzing import run_engine


def test_one_input(data: bytes) -> None:
    """One program."""
    run_engine(data)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
