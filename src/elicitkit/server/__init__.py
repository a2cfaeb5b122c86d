"""Server side: the decorator framework, the low-level method registry, the per-connection session.

``RequestContext`` is the name low-level handlers have always annotated their argument with;
it is the per-request :class:`~elicitkit.server.scope.RequestScope`.
"""

from elicitkit.server.content import Audio, EmbeddedResource, Image, ResourceLink, Text
from elicitkit.server.context import Context
from elicitkit.server.lowlevel import LowLevelServer
from elicitkit.server.prompts import AssistantMessage, Message, UserMessage
from elicitkit.server.resolvers import Elicit, Resolve
from elicitkit.server.scope import RequestScope
from elicitkit.server.scope import RequestScope as RequestContext
from elicitkit.server.server import MCPServer, Server
from elicitkit.server.session import ServerSession
from elicitkit.server.tools import ToolError, ToolResult

__all__ = [
    "AssistantMessage",
    "Audio",
    "Context",
    "Elicit",
    "EmbeddedResource",
    "Image",
    "LowLevelServer",
    "MCPServer",
    "Message",
    "RequestContext",
    "RequestScope",
    "Resolve",
    "ResourceLink",
    "Server",
    "ServerSession",
    "Text",
    "ToolError",
    "ToolResult",
    "UserMessage",
]
