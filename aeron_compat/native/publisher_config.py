"""Settings and bookkeeping records of a native publication (`Publisher`, publisher.py).

`PublisherConfig` holds one stream's parameters and timers (nanoseconds) and checks the MTU;
`DestinationMode` says how the publisher finds where to send (one endpoint, or manual / dynamic
multi-destination-cast); `Destination` and `ReceiverState` are the per-address and per-receiver
records the publisher keeps for sending and flow control.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from aeron_compat.native.frames import DATA_HEADER_LENGTH

Address = tuple[str, int]
Outgoing = tuple[bytes, Address]




class DestinationMode(Enum):
    """How a publication finds where to send: one endpoint, or multi-destination-cast."""

    UNICAST = "unicast"
    MANUAL = "manual"
    DYNAMIC = "dynamic"


@dataclass
class PublisherConfig:
    """Stream parameters and timers of one publication (times in nanoseconds)."""

    session_id: int
    stream_id: int
    initial_term_id: int
    term_length: int = 1024 * 1024
    mtu: int = 1408
    ttl: int = 0
    mode: DestinationMode = DestinationMode.UNICAST
    heartbeat_interval_ns: int = 100_000_000
    setup_interval_ns: int = 100_000_000
    connection_timeout_ns: int = 5_000_000_000
    receiver_timeout_ns: int = 5_000_000_000
    retransmit_linger_ns: int = 10_000_000
    max_retransmits: int = 16
    rttm_reply_interval_ns: int = 100_000
    linger_ns: int = 1_000_000_000

    def __post_init__(self) -> None:
        if self.mtu % 32 or not DATA_HEADER_LENGTH < self.mtu <= 65504:
            raise ValueError(f"mtu {self.mtu} must be a multiple of 32 between 64 and 65504")


@dataclass
class Destination:
    """A place data goes: `answered` once an SM came from it."""

    address: Address
    manual: bool
    last_sm_ns: int | None = None


@dataclass
class ReceiverState:
    """Flow-control view of one receiver (keyed by receiver id and address)."""

    limit: int
    last_sm_ns: int
    end_of_stream: bool = False
