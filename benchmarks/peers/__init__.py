"""Peers in the benchmark (`aqueduct bench --peers`, from a checkout: aqueduct/bench/lab.py): what a Python
service author picks instead of Aqueduct, measured beside it in the same run, on the same workloads.

One module per peer, each with the same function API, depending only on aqueduct and its peer library:

- `serve(cert, key, variant) -> Served` (in a server process of its own: serve.py): start the server on a
  free loopback port; `Served.info` (the port and whatever else a client needs) goes to the clients,
  `Served.pids` are the processes whose CPU counts as the server's side (NATS: the responder and the
  nats-server), `Served.memory_pid` the one whose RSS is the server's memory per connection;
- `Client(info, ca, variant)`: `open()`, `close()`, `call(body) -> body` (one unary request/reply; may
  run concurrently: "in flight"), `oneway(size, window, limit) -> Rate` (one-way streaming, counted by the
  server), `connect_first_reply(zero_rtt) -> seconds` (a new connection to its first reply), and
  `open_idle() -> close` (one more connection, used once, then left idle).

grpc.py (grpcio aio, h2c and TLS: generic handlers with bytes in and out, no protoc), zmq.py (pyzmq:
DEALER/ROUTER for request/reply, PUSH/PULL for streaming), nats.py (nats-py through a local nats-server)
and aqueduct.py (Aqueduct's own rows in the same harness: a request with a fresh oneshot per call, a
request on a pre-opened channel pair, raw and typed streaming, connect 0-RTT and 1-RTT). measure.py
measures one row in a process of its own, run.py drives rows and servers for the runner. A peer whose
library or server program is missing is reported so (`unavailable`), never a crash. The libraries are
the `bench` extra: `pip install 'aqueduct-quic[bench]'`; nats-server: `scripts/setup-system.sh nats`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass

from aqueduct.bench import lab

RR = ("rr1", "rr1_p50", "rr1_p99", "rr1_cpu_server", "rr1_cpu_client",
      "rr32", "rr32_p50", "rr32_p99", "rr32_cpu_server", "rr32_cpu_client")
"""The request/reply workloads: calls/s, p50 and p99 (us), CPU per call on each side (us), at 1 and 32 in
flight."""
FULL = ("rr1", "rr32", "msg64", "setup_1rtt", "conn_mem")
"""A peer row's workloads (rr1 and rr32 stand for all of RR)."""


@dataclass(frozen=True)
class Kind:
    """One kind of peer server process and what it needs."""

    module: str
    """The module under benchmarks.peers implementing the API above."""
    variant: str
    library: str
    """The import name of its Python library (checked with find_spec)."""
    program: str | None = None
    """A server program it runs (checked on PATH)."""
    install: str = "pip install 'aqueduct-quic[bench]'"


KINDS = {
    "aqueduct": Kind("aqueduct", "", "aqueduct"),
    "grpc-h2c": Kind("grpc", "h2c", "grpc"),
    "grpc-tls": Kind("grpc", "tls", "grpc"),
    "zmq": Kind("zmq", "", "zmq"),
    "nats": Kind("nats", "", "nats", "nats-server"),
}


@dataclass(frozen=True)
class PeerRow:
    """One row of the peer table: a server kind, the client's variant and its workloads."""

    name: str
    kind: str
    workloads: tuple[str, ...]
    variant: str = ""


ROWS = [
    PeerRow("aqueduct request", "aqueduct", ("rr1", "rr32"), "request"),
    PeerRow("aqueduct typed request", "aqueduct", ("rr1", "rr32"), "typed request"),
    PeerRow("aqueduct pair", "aqueduct", ("rr1", "rr32"), "pair"),
    PeerRow("aqueduct raw", "aqueduct", ("msg64", "setup_1rtt", "setup_0rtt", "conn_mem"), "raw"),
    PeerRow("aqueduct typed", "aqueduct", ("msg64",), "typed"),
    PeerRow("grpcio h2c", "grpc-h2c", FULL),
    PeerRow("grpcio TLS", "grpc-tls", FULL),
    PeerRow("zeromq", "zmq", FULL),
    PeerRow("nats", "nats", FULL),
]
"""'aqueduct request': `aqueduct.request` (a fresh oneshot per call); 'aqueduct typed request': the same on a
typed entrypoint (peers/aqueduct.py's `Call`); 'aqueduct pair': requests on one
pre-opened channel pair; 'aqueduct raw' / 'typed': 64 B streaming raw and as a typed message
(aqueduct/bench/typed.py)."""
BY_NAME = {r.name: r for r in ROWS}
GRPC_TLS = lab.GRPC_TLS
"""The request/reply rows' reference (the issue's targets compare with it)."""


def find_program(name: str) -> str | None:
    """The path of server program `name`: on PATH, or in the sbin directories Debian installs servers to."""
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin"]))


def unavailable(kind: str) -> str | None:
    """Why peer server `kind` cannot run here (its library or program is missing), or None."""
    k = KINDS[kind]
    if importlib.util.find_spec(k.library) is None:
        return f"{k.library} not installed ({k.install})"
    if k.program is not None and find_program(k.program) is None:
        return f"{k.program} not installed (scripts/setup-system.sh nats)"
    return None
