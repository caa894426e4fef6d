"""The aioquic adapter: TLS and certificates, paced flow control, 0-RTT tickets, the engine driver."""
