"""elicitkit: a Model Context Protocol implementation built around elicitation.

Everything a user needs is importable from here.
"""

from elicitkit.client import Client
from elicitkit.protocol.errors import ConnectionClosed, MCPError, RequestTimeout
from elicitkit.server import (
    AssistantMessage,
    Audio,
    Context,
    EmbeddedResource,
    Image,
    LowLevelServer,
    MCPServer,
    Message,
    RequestContext,
    ResourceLink,
    Server,
    ServerSession,
    Text,
    ToolError,
    ToolResult,
    UserMessage,
)

__version__ = "0.1.0"

__all__ = [
    "AssistantMessage",
    "Audio",
    "Client",
    "ConnectionClosed",
    "Context",
    "EmbeddedResource",
    "Image",
    "LowLevelServer",
    "MCPError",
    "MCPServer",
    "Message",
    "RequestContext",
    "RequestTimeout",
    "ResourceLink",
    "Server",
    "ServerSession",
    "Text",
    "ToolError",
    "ToolResult",
    "UserMessage",
    "__version__",
]
