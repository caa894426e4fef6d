"""atheris target: the engine fed a byte-driven program as a malicious peer (see aqueduct/reliability/fuzzing.py).

    .venv/bin/python fuzz/fuzz_engine.py -max_total_time=600 fuzz/corpus/engine
A crash is an outcome other than normal processing or a coded CloseConnection, or a bound exceeded.
"""

import sys

import atheris

with atheris.instrument_imports():
    from aqueduct.reliability.fuzzing import run_engine


def test_one_input(data: bytes) -> None:
    """One program."""
    run_engine(data)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
