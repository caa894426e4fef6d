"""Reliability tooling for real connections: a seeded UDP impairment proxy and checked random channel traffic.

impair.py: `ImpairProxy` (loss, bursts, duplication, reordering, delay, blackouts) between real QUIC
endpoints on loopback. traffic.py: `TreeTraffic` (random channel trees, every delivery mode, finish,
cancel, early close) and `Ledger` (exactly-once, order, ack/nack agreement). Used by
tests/reliability and benchmarks/soak.py.
"""
