"""elicitkit: a Model Context Protocol implementation built around elicitation.

Everything a user needs is importable from here.
"""

from elicitkit.client import Client
from elicitkit.protocol.errors import ConnectionClosed, MCPError, RequestTimeout
from elicitkit.server import LowLevelServer, RequestContext, ServerSession

__version__ = "0.1.0"

__all__ = [
    "Client",
    "ConnectionClosed",
    "LowLevelServer",
    "MCPError",
    "RequestContext",
    "RequestTimeout",
    "ServerSession",
    "__version__",
]
