"""The side-by-side benchmark suite: the same as `aqueduct bench` (its code lives in aqueduct/bench/).

    python benchmarks/bench_suite.py [--rounds 5] [--json out.json] [--plot out.png] [--uvloop] [--only NAME]

Aqueduct (ordered/unordered/unreliable, raw and CBOR codecs), raw aioquic
(one stream, length-prefixed; datagrams) and asyncio TCP, against a peer in
its own process, in alternating rounds; then the engine-only costs.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aqueduct.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
