"""Configuration of the client and its embedded driver."""

from .aeron import Context

__all__ = ["Context"]
