"""elicitkit: a Model Context Protocol implementation built around elicitation.

Everything a user needs is importable from here.
"""

from typing import TYPE_CHECKING, Any

from elicitkit.client import Client
from elicitkit.client.handlers import AuditLog, CIHandler, ElicitationHandler, Policy, RateLimit, SensitiveFieldGuard
from elicitkit.client.responder import QuestionRefused, UrlElicitationRequiredError
from elicitkit.elicitation import (
    LEGACY_ENUM_NAMES,
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationAction,
    ElicitationError,
    ElicitationFailed,
    ElicitationMode,
    ElicitationResult,
    ElicitationTimeout,
    ElicitationUnsupported,
    ElicitRequest,
    Format,
    FormRequest,
    InvalidAnswer,
    Origin,
    SchemaError,
    TitledEnum,
    Titles,
    UrlElicitationRequired,
    UrlRequest,
    create_form_request,
    create_url_request,
)
from elicitkit.protocol.errors import ConnectionClosed, MCPError, RequestTimeout
from elicitkit.server import (
    AssistantMessage,
    Audio,
    Context,
    Elicit,
    EmbeddedResource,
    Image,
    LowLevelServer,
    MCPServer,
    Message,
    RequestContext,
    Resolve,
    ResourceLink,
    Server,
    ServerSession,
    Text,
    ToolError,
    ToolResult,
    UserMessage,
)

if TYPE_CHECKING:
    from elicitkit.client.handlers import BrowserHandler, TerminalHandler

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The interactive handlers import their UI libraries on first use.
    if name in ("TerminalHandler", "BrowserHandler"):
        from elicitkit.client import handlers

        return getattr(handlers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LEGACY_ENUM_NAMES",
    "AcceptedElicitation",
    "AssistantMessage",
    "Audio",
    "AuditLog",
    "BrowserHandler",
    "CIHandler",
    "CancelledElicitation",
    "Client",
    "ConnectionClosed",
    "Context",
    "DeclinedElicitation",
    "Elicit",
    "ElicitRequest",
    "ElicitationAction",
    "ElicitationError",
    "ElicitationFailed",
    "ElicitationHandler",
    "ElicitationMode",
    "ElicitationResult",
    "ElicitationTimeout",
    "ElicitationUnsupported",
    "EmbeddedResource",
    "FormRequest",
    "Format",
    "Image",
    "InvalidAnswer",
    "LowLevelServer",
    "MCPError",
    "MCPServer",
    "Message",
    "Origin",
    "Policy",
    "QuestionRefused",
    "RateLimit",
    "RequestContext",
    "RequestTimeout",
    "Resolve",
    "ResourceLink",
    "SchemaError",
    "SensitiveFieldGuard",
    "Server",
    "ServerSession",
    "TerminalHandler",
    "Text",
    "TitledEnum",
    "Titles",
    "ToolError",
    "ToolResult",
    "UrlElicitationRequired",
    "UrlElicitationRequiredError",
    "UrlRequest",
    "UserMessage",
    "__version__",
    "create_form_request",
    "create_url_request",
]
