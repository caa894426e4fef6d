"""Media drivers: the embedded `MediaDriver` (media_driver.py: sessions, ipc matching, counters),
the standalone driver process (standalone.py), the client's proxy for it (proxy.py) and the
Unix-socket messages between them (wire.py).
"""
