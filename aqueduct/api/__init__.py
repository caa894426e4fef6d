"""The asyncio API: connect / serve, Connection, Sender / Receiver, channel(), oneshot(), request(), codecs."""

from .codec import CborCodec, Codec, CodecError, RawCodec, RawMessage
from .connection import CodecMismatch, Connection, Stats
from .endpoints import Server, connect, serve
from .fanout import Broadcast, Watch, broadcast, watch
from .halves import Message, OneshotReceiver, OneshotSender, Receiver, Sender, channel, oneshot
from .reconnect import Attempt, Backoff, reconnecting
from .request import request
from .schema import SchemaMismatch

__all__ = [
    "Attempt",
    "Backoff",
    "Broadcast",
    "CborCodec",
    "Codec",
    "CodecError",
    "CodecMismatch",
    "Connection",
    "Message",
    "OneshotReceiver",
    "OneshotSender",
    "RawCodec",
    "RawMessage",
    "Receiver",
    "SchemaMismatch",
    "Sender",
    "Server",
    "Stats",
    "Watch",
    "broadcast",
    "channel",
    "connect",
    "oneshot",
    "reconnecting",
    "request",
    "serve",
    "watch",
]
