"""The asyncio API: connect / serve, Connection, Sender / Receiver, channel(), codecs."""

from .codec import CborCodec, Codec, CodecError, RawCodec, RawMessage
from .connection import CodecMismatch, Connection, Stats
from .endpoints import Server, connect, serve
from .halves import Message, Receiver, Sender, channel
from .reconnect import Attempt, Backoff, reconnecting

__all__ = [
    "Attempt",
    "Backoff",
    "CborCodec",
    "Codec",
    "CodecError",
    "CodecMismatch",
    "Connection",
    "Message",
    "RawCodec",
    "RawMessage",
    "Receiver",
    "Sender",
    "Server",
    "Stats",
    "channel",
    "connect",
    "reconnecting",
    "serve",
]
