"""JSON-RPC and MCP error codes, and the one exception type that carries them.

Every error that crosses the wire is an :class:`MCPError`; errors created locally (a timeout,
a closed connection) use codes outside the JSON-RPC reserved range so they can never be
mistaken for something the peer said.
"""

from __future__ import annotations

from typing import Any

from elicitkit.errors import ElicitkitError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# MCP codes.
RESOURCE_NOT_FOUND = -32002  # legacy eras only
URL_ELICITATION_REQUIRED = -32042  # 2025-11-25 only
HEADER_MISMATCH = -32020  # 2026-07-28
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021  # 2026-07-28
UNSUPPORTED_PROTOCOL_VERSION = -32022  # 2026-07-28

# Local conditions, never sent by a peer (outside -32768..-32000).
REQUEST_TIMEOUT = -1001
CONNECTION_CLOSED = -1002
REQUEST_CANCELLED = -1003

ERROR_NAMES: dict[int, str] = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
    RESOURCE_NOT_FOUND: "Resource not found",
    URL_ELICITATION_REQUIRED: "URL elicitation required",
    HEADER_MISMATCH: "Header mismatch",
    MISSING_REQUIRED_CLIENT_CAPABILITY: "Missing required client capability",
    UNSUPPORTED_PROTOCOL_VERSION: "Unsupported protocol version",
    REQUEST_TIMEOUT: "Request timed out",
    CONNECTION_CLOSED: "Connection closed",
    REQUEST_CANCELLED: "Request cancelled",
}


class MCPError(ElicitkitError):
    """A JSON-RPC error: raised by handlers to answer with an error, raised to callers on error replies."""

    def __init__(self, code: int, message: str | None = None, data: Any = None) -> None:
        self.code = code
        self.message = message if message is not None else ERROR_NAMES.get(code, "Error")
        self.data = data
        super().__init__(f"{self.message} ({code})")

    def to_error(self) -> dict[str, Any]:
        """The wire ``error`` object."""
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err

    @classmethod
    def from_error(cls, error: dict[str, Any]) -> MCPError:
        """Rebuild from a wire ``error`` object (tolerant of peers that send odd shapes)."""
        code = error.get("code")
        message = error.get("message")
        return cls(
            code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
            message if isinstance(message, str) else "Error",
            error.get("data"),
        )

    @property
    def is_local(self) -> bool:
        """True for conditions this process detected itself (timeout, closed, cancelled)."""
        return self.code in (REQUEST_TIMEOUT, CONNECTION_CLOSED, REQUEST_CANCELLED)


class RequestTimeout(MCPError):
    """The peer did not answer within the request's timeout."""

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(REQUEST_TIMEOUT, f"{method} timed out after {timeout:g}s")
        self.method = method
        self.timeout = timeout


class ConnectionClosed(MCPError):
    """The connection ended before the answer arrived."""

    def __init__(self, detail: str = "connection closed") -> None:
        super().__init__(CONNECTION_CLOSED, detail)


class LocalProtocolError(ElicitkitError):
    """This side tried to do something the protocol forbids (a bug in the caller, not the peer)."""


# The HTTP status of a 2026-07-28 JSON error answer (anything else is 200 with the error body).
MODERN_HTTP_STATUS: dict[int, int] = {
    INVALID_PARAMS: 400,
    INVALID_REQUEST: 400,
    PARSE_ERROR: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


def modern_http_status(code: object) -> int:
    """The HTTP status a 2026-07-28 server answers a JSON-RPC error ``code`` with."""
    return MODERN_HTTP_STATUS.get(code, 200) if isinstance(code, int) else 200
