"""How `aeron:udp` travels between drivers.

matcher.py links publication logs to subscriptions in one domain; loopback.py is the in-process
domain (no sockets); aqueduct.py carries aeron:udp over Aqueduct/QUIC, with link.py (one
connection between two drivers), remote.py (sinks and sessions that cross it), batch.py (frames
inside one Aqueduct message) and shared_loop.py (the loop thread of sync programs' drivers);
stream.py carries it over Marlin Stream (`transport=stream`), the same network on another
transport, with stream_link.py (one Stream connection, framed streams) and stream_session.py (one
Stream stream per publication session).
Nothing here imports the driver: a network reaches its driver through the `NetworkHost` protocol
(aqueduct.py), sinks and sessions their network through `SessionHost` (remote.py).
"""
