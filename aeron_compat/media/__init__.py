"""How `aeron:udp` travels between drivers: the Aeron model's media.

matcher.py links publication logs to subscriptions in one domain; loopback.py is the in-process
domain (no sockets). Between processes, network.py's `DriverNetwork` is the one driver network
(which driver serves and which dials, the reg / unreg / setup control messages, matching,
re-dialling), with link.py (`ControlLink`: one connection between two drivers), sessions.py (remote
subscribers, sinks and receiving sessions, whatever the transport), batch.py (frames in one batch)
and shared_loop.py (the loop thread of sync programs' drivers). It runs over a `Transport`
(transport.py), of which there are two, each in modules of its own that import nothing of the other:
aqueduct.py (Aqueduct over QUIC, with aqueduct_link.py and aqueduct_session.py) and marlin.py (Marlin
Stream, `transport=stream`, with marlin_link.py and marlin_session.py).
Nothing here imports the driver: a network reaches its driver through the `NetworkHost` protocol
(network.py), sinks and sessions their network through `SessionHost` (sessions.py).
"""
