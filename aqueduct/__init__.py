"""aqueduct: typed, networked message channels over QUIC (the Aqueduct protocol)."""

from .wire.errors import CloseCode, ProtocolError

__version__ = "0.1.0"

__all__ = ["CloseCode", "ProtocolError", "__version__"]
