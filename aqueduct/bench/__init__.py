"""The side-by-side benchmark suite behind `aqueduct bench`.

One run starts a peer process (peer.py) serving every transport at once:
Aqueduct with the raw and the CBOR codec, raw aioquic (one stream per
workload, varint length-prefixed frames, plus datagrams) and asyncio TCP
(the same framing). The measuring process drives the same workloads over
each transport in alternating rounds (runner.py), so every figure comes
with its same-run ratio against raw aioquic; engine.py adds the
engine-only costs (no sockets). report.py prints the table, JSON and plot.
loss.py (`aqueduct bench --loss-curves`) measures goodput through the seeded UDP impairment proxy
(aqueduct/testing/impair.py), which tests/reliability and benchmarks/soak.py run through too.
Every server counts what it saw (tally.py), and tests/bench/ prove each row against those counts.

The peer rows (`--peers`: grpcio, ZeroMQ, NATS) and the service rows (`--services`) are not shipped: they
are the repository's bench lab, benchmarks/, which lab.py loads from a checkout.
"""
