"""Typed remote services over Aqueduct channels: interfaces, stubs, dispatch and capabilities.

A service interface is a class deriving from `Service` with typed async methods (interface.py). A call is a
message on the service's channel (the connection's entrypoint, or a capability's channel) carrying the
arguments and a reply oneshot (stub.py sends it, dispatch.py runs it); a service object inside any message
travels as a capability, the Sender of its own call channel (capability.py); interceptors, per-call
metadata and deadlines are context.py's; `connect`/`serve` with `service=` are endpoints.py's.
"""

from .context import CallInfo, CallLimitExceeded, Interceptor, ServiceLimits, call_options, current_call
from .endpoints import ServiceConnection, connect, serve
from .interface import Service
from .stub import RemoteError

__all__ = [
    "CallInfo", "CallLimitExceeded", "Interceptor", "RemoteError", "Service", "ServiceConnection", "ServiceLimits",
    "call_options", "connect", "current_call", "serve",
]
