# The loopback network: `aeron:udp` between drivers of one process without sockets.  It is a
# matching domain shared by every driver in the process, plus the bookkeeping a UDP network
# would impose: an endpoint is bound by one driver at a time, port 0 gets an ephemeral port, and
# each driver has an address (127.0.0.1:<port>) that images report as their source identity.
# It stands in for the Aqueduct transport wherever one process holds both ends (tests, examples).
"""`LoopbackNetwork`: in-process aeron:udp."""

from __future__ import annotations

import itertools
import threading

from ..client.codes import RegistrationError
from ..client.image import Image
from .matcher import Key, Matcher


def normalise_host(host: str) -> str:
    """Names of the loopback interface all become 127.0.0.1."""
    host = host.lower()
    return "127.0.0.1" if host in ("localhost", "::1", "0.0.0.0", "::") else host


class LoopbackNetwork(Matcher):
    """Matching domain for aeron:udp within the process, with endpoint binding."""

    def __init__(self) -> None:
        super().__init__()
        self.bound: dict[str, tuple[int, int]] = {}
        self._ports = itertools.count(50000)
        self.lock = threading.RLock()

    def ephemeral_port(self) -> int:
        """A port no loopback endpoint uses."""
        while True:
            port = next(self._ports)
            if not any(ep.endswith(f":{port}") for ep in self.bound):
                return port

    def bind(self, driver_id: int, host: str, port: int) -> str:
        """Bind `host:port` for `driver_id` (shared by that driver's subscriptions)."""
        host = normalise_host(host)
        with self.lock:
            endpoint = f"{host}:{port or self.ephemeral_port()}"
            owner, refs = self.bound.get(endpoint, (driver_id, 0))
            if owner != driver_id:
                raise RegistrationError(f"endpoint: {endpoint} is already bound by another driver")
            self.bound[endpoint] = (driver_id, refs + 1)
            return endpoint

    def prepare(self, keys: set[Key]) -> None:
        """Nothing to set up before matching in-process (the Aqueduct media binds control endpoints)."""

    def response_key(self, image: Image) -> Key:
        """Key of a response publication answering `image`."""
        return ("resp", image.response_correlation_id)

    def unbind(self, endpoint: str) -> None:
        """Release one use of `endpoint`."""
        with self.lock:
            owner, refs = self.bound.get(endpoint, (0, 0))
            if refs <= 1:
                self.bound.pop(endpoint, None)
            else:
                self.bound[endpoint] = (owner, refs - 1)


LOOPBACK = LoopbackNetwork()
"""The process's loopback network."""
