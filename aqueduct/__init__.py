"""aqueduct: typed, networked message channels over QUIC (the Aqueduct protocol).

Every public name is listed in `__all__` (and by `dir(aqueduct)`); the API names load on first use, so
`import aqueduct.wire` stays free of asyncio and aioquic. `aqueduct.__version__` is the installed package's
version (`aqueduct --version` prints it).
"""

from typing import TYPE_CHECKING, Any

from .wire.errors import CloseCode, ProtocolError

if TYPE_CHECKING:
    from .api import (
        Attempt,
        Backoff,
        Broadcast,
        CborCodec,
        Codec,
        CodecError,
        CodecMismatch,
        Connection,
        Message,
        OneshotReceiver,
        OneshotSender,
        RawCodec,
        RawMessage,
        Receiver,
        SchemaMismatch,
        Sender,
        Server,
        Stats,
        Watch,
        broadcast,
        channel,
        oneshot,
        reconnecting,
        request,
        watch,
    )
    from .core.app import Delivery
    from .core.config import EngineConfig
    from .errors import (
        AqueductError,
        AuthenticationFailed,
        ChannelCancelled,
        ChannelClosed,
        ChannelError,
        ChannelLost,
        ConfigError,
        ConnectError,
        ConnectionLost,
        EndReason,
        Lagged,
        LimitExceeded,
        Outcome,
        ReceiverDropped,
        Timeout,
        ValidationError,
        WouldBlock,
    )
    from .quic.mtls import PeerIdentity
    from .quic.settings import TransportSettings
    from .quic.tickets import FileTicketStore, MemoryTicketStore
    from .services import (
        CallInfo,
        RemoteError,
        Service,
        ServiceConnection,
        call_options,
        connect,
        current_call,
        serve,
    )

_LAZY = {
    **dict.fromkeys(
        ["Attempt", "Backoff", "Broadcast", "CborCodec", "Codec", "CodecError", "CodecMismatch", "Connection",
         "Message", "OneshotReceiver", "OneshotSender", "RawCodec", "RawMessage", "Receiver", "SchemaMismatch",
         "Sender", "Server", "Stats", "Watch", "broadcast", "channel", "oneshot", "reconnecting", "request",
         "watch"],
        ".api",
    ),
    **dict.fromkeys(
        ["CallInfo", "RemoteError", "Service", "ServiceConnection", "call_options", "connect", "current_call",
         "serve"],
        ".services",
    ),
    "Delivery": ".core.app",
    "EngineConfig": ".core.config",
    **dict.fromkeys(
        ["AqueductError", "AuthenticationFailed", "ChannelCancelled", "ChannelClosed", "ChannelError", "ChannelLost",
         "ConfigError", "ConnectError", "ConnectionLost", "EndReason", "Lagged", "LimitExceeded", "Outcome",
         "ReceiverDropped", "Timeout", "ValidationError", "WouldBlock"],
        ".errors",
    ),
    "TransportSettings": ".quic.settings",
    "PeerIdentity": ".quic.mtls",
    "FileTicketStore": ".quic.tickets",
    "MemoryTicketStore": ".quic.tickets",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed distribution's, so pyproject.toml is the one place it is written
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("aqueduct-py")
        except PackageNotFoundError:  # imported from a source tree that was never installed
            return "0+unknown"
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'aqueduct' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __name__), name)


def __dir__() -> list[str]:
    return sorted({*__all__, "__version__", *(name for name in globals() if name.startswith("__"))})


__all__ = [
    "AqueductError",
    "Attempt",
    "AuthenticationFailed",
    "Backoff",
    "Broadcast",
    "CallInfo",
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
    "EndReason",
    "EngineConfig",
    "FileTicketStore",
    "Lagged",
    "LimitExceeded",
    "MemoryTicketStore",
    "Message",
    "OneshotReceiver",
    "OneshotSender",
    "Outcome",
    "PeerIdentity",
    "ProtocolError",
    "RawCodec",
    "RawMessage",
    "Receiver",
    "ReceiverDropped",
    "RemoteError",
    "SchemaMismatch",
    "Sender",
    "Server",
    "Service",
    "ServiceConnection",
    "Stats",
    "Timeout",
    "TransportSettings",
    "ValidationError",
    "Watch",
    "WouldBlock",
    "broadcast",
    "call_options",
    "channel",
    "connect",
    "current_call",
    "oneshot",
    "reconnecting",
    "request",
    "serve",
    "watch",
]
