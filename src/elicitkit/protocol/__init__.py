"""The protocol core: messages, framing, correlation, handshake and versions. No I/O anywhere here."""

from elicitkit.protocol.connection import Connection, Role
from elicitkit.protocol.errors import MCPError
from elicitkit.protocol.jsonrpc import ErrorResponse, Notification, Request, RequestId, Response

__all__ = ["Connection", "ErrorResponse", "MCPError", "Notification", "Request", "RequestId", "Response", "Role"]
