"""Server side: the decorator framework, the low-level method registry, the per-connection session."""

from elicitkit.server.content import Audio, EmbeddedResource, Image, ResourceLink, Text
from elicitkit.server.context import Context
from elicitkit.server.framework import MCPServer, Server
from elicitkit.server.lowlevel import LowLevelServer
from elicitkit.server.prompts import AssistantMessage, Message, UserMessage
from elicitkit.server.resolvers import Elicit, Resolve
from elicitkit.server.session import RequestContext, ServerSession
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
    "Resolve",
    "ResourceLink",
    "Server",
    "ServerSession",
    "Text",
    "ToolError",
    "ToolResult",
    "UserMessage",
]
