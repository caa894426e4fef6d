"""The aioquic adapter: TLS and certificates, paced flow control, 0-RTT tickets, the engine driver.

The only package that imports aioquic's internals: the rest of aqueduct reads what it needs of a QUIC
connection (RTT, the peer's address, congestion figures, lost packets) through `introspect`
(tests/architecture/test_aioquic_stays_in_quic.py).
"""
