"""Server side: the low-level method registry and the per-connection session."""

from elicitkit.server.lowlevel import LowLevelServer
from elicitkit.server.session import RequestContext, ServerSession

__all__ = ["LowLevelServer", "RequestContext", "ServerSession"]
