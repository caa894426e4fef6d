"""CI-sized fuzzing of the frame decoders: whole and chunked decoding agree, and fail only with a coded error."""

from __future__ import annotations

import random

from harness.fuzzing import run_decoder
from hypothesis import given, settings
from hypothesis import strategies as st

from aqueduct.wire.frames import Message, encode_frame

VALID = encode_frame(Message(4, 1, (), b"payload"))


@settings(max_examples=1500, deadline=None)
@given(st.binary(max_size=600))
def test_decoder_on_any_bytes(data: bytes) -> None:
    run_decoder(data)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(VALID) * 3), st.binary(max_size=3)), max_size=4))
def test_decoder_on_mutated_valid_frames(edits: list[tuple[int, bytes]]) -> None:
    data = bytearray(VALID * 3)
    for pos, repl in edits:
        data[pos : pos + len(repl)] = repl
    run_decoder(bytes(data))


def test_decoder_on_a_seeded_random_corpus() -> None:
    rng = random.Random(7)
    decoded = sum(run_decoder(rng.randbytes(rng.randint(0, 300))) for _ in range(5000))
    decoded += sum(run_decoder(VALID * rng.randint(1, 5)) for _ in range(100))
    assert decoded >= 100
