"""aqueduct: typed, networked message channels over QUIC (the Aqueduct protocol)."""

from typing import TYPE_CHECKING, Any

from .wire.errors import CloseCode, ProtocolError

if TYPE_CHECKING:
    from .api import (
        Attempt,
        Backoff,
        CborCodec,
        Codec,
        CodecError,
        CodecMismatch,
        Connection,
        Message,
        RawCodec,
        RawMessage,
        Receiver,
        Sender,
        Server,
        channel,
        connect,
        reconnecting,
        serve,
    )
    from .core.app import Delivery
    from .errors import (
        AqueductError,
        ChannelCancelled,
        ChannelClosed,
        ChannelError,
        ChannelLost,
        ConfigError,
        ConnectError,
        ConnectionLost,
        LimitExceeded,
        ReceiverDropped,
        WouldBlock,
    )
    from .quic.settings import TransportSettings
    from .quic.tickets import FileTicketStore, MemoryTicketStore

# The API names load on first use, so `import aqueduct.wire` stays free of asyncio and aioquic.
_LAZY = {
    **dict.fromkeys(
        ["Attempt", "Backoff", "CborCodec", "Codec", "CodecError", "CodecMismatch", "Connection", "Message",
         "RawCodec", "RawMessage", "Receiver", "Sender", "Server", "channel", "connect", "reconnecting", "serve"],
        ".api",
    ),
    "Delivery": ".core.app",
    **dict.fromkeys(
        ["AqueductError", "ChannelCancelled", "ChannelClosed", "ChannelError", "ChannelLost", "ConfigError",
         "ConnectError", "ConnectionLost",
         "LimitExceeded", "ReceiverDropped", "WouldBlock"],
        ".errors",
    ),
    "TransportSettings": ".quic.settings",
    "FileTicketStore": ".quic.tickets",
    "MemoryTicketStore": ".quic.tickets",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'aqueduct' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __name__), name)


__version__ = "0.1.0"

__all__ = [
    "AqueductError",
    "Attempt",
    "Backoff",
    "CborCodec",
    "ChannelCancelled",
    "ChannelClosed",
    "ChannelError",
    "ChannelLost",
    "CloseCode",
    "Codec",
    "CodecError",
    "CodecMismatch",
    "ConfigError",
    "ConnectError",
    "Connection",
    "ConnectionLost",
    "Delivery",
    "FileTicketStore",
    "LimitExceeded",
    "MemoryTicketStore",
    "Message",
    "ProtocolError",
    "RawCodec",
    "RawMessage",
    "Receiver",
    "ReceiverDropped",
    "Sender",
    "Server",
    "TransportSettings",
    "WouldBlock",
    "__version__",
    "channel",
    "connect",
    "reconnecting",
    "serve",
]
