"""The asyncio API: connect / serve, Connection, Sender / Receiver, channel(), oneshot(), request(), codecs.

`__all__` lists what `aqueduct` exports from here (aqueduct/__init__.py joins it with the errors' and the
services' lists): the modules of this package are the library's own, not API. `connect` and `serve` are
left out of it: `aqueduct.connect` and `aqueduct.serve` are the services' versions of these (they add
`service=`); `aqueduct.api.connect` stays importable for them.
"""

from ..core.app import Delivery
from ..core.config import EngineConfig
from ..native import compiled
from ..quic.mtls import PeerIdentity
from ..quic.settings import TransportSettings
from ..quic.tickets import FileTicketStore, MemoryTicketStore
from ..quic.webtransport import WebTransportOptions
from .codec import CborCodec, Codec, RawCodec, RawMessage
from .connection import CodecMismatch, Connection, Stats
from .endpoints import Server
from .endpoints import connect as connect  # (imported by name; aqueduct.connect is the services' one)
from .endpoints import serve as serve
from .fanout import Broadcast, Watch
from .halves import Message, OneshotReceiver, OneshotSender, Receiver, Sender, channel, oneshot
from .oneof import OneOf
from .reconnect import Attempt, Backoff, reconnecting
from .request import request
from .runner import run
from .schema import SchemaMismatch

__all__ = [
    "Attempt",
    "Backoff",
    "Broadcast",
    "CborCodec",
    "Codec",
    "CodecMismatch",
    "Connection",
    "Delivery",
    "EngineConfig",
    "FileTicketStore",
    "MemoryTicketStore",
    "Message",
    "OneOf",
    "OneshotReceiver",
    "OneshotSender",
    "PeerIdentity",
    "RawCodec",
    "RawMessage",
    "Receiver",
    "SchemaMismatch",
    "Sender",
    "Server",
    "Stats",
    "TransportSettings",
    "Watch",
    "WebTransportOptions",
    "channel",
    "compiled",
    "oneshot",
    "reconnecting",
    "request",
    "run",
]
