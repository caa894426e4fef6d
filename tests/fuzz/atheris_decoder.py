"""atheris target: decode_frames and a chunk-fed FrameReader must agree and fail only with a coded ProtocolError.

    .venv/bin/python tests/fuzz/atheris_decoder.py -max_total_time=600 tests/fuzz/corpus/decoder
"""

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: harness.fuzzing

with atheris.instrument_imports():
    from harness.fuzzing import run_decoder


def test_one_input(data: bytes) -> None:
    """One buffer."""
    run_decoder(data)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
