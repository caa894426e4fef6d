"""atheris target: decode_frames and a chunk-fed FrameReader must agree and fail only with a coded ProtocolError.

    .venv/bin/python fuzz/fuzz_decoder.py -max_total_time=600 fuzz/corpus/decoder
"""

import sys

import atheris

with atheris.instrument_imports():
    from aqueduct.reliability.fuzzing import run_decoder


def test_one_input(data: bytes) -> None:
    """One buffer."""
    run_decoder(data)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
