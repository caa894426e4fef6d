"""The sans-I/O Aqueduct protocol engine (no asyncio, aioquic or sockets here)."""
