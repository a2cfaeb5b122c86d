"""JSON-RPC 2.0 messages: parse and validate incoming data, build outgoing wire dicts.

Messages are small slotted classes for the inside of the library and plain dicts on the wire;
:func:`parse` is the only place a raw dict becomes a message, so every malformed input gets
its error in one spot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

import orjson

from elicitkit.errors import ElicitkitError
from elicitkit.protocol.errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, MCPError

RequestId: TypeAlias = "int | str"
JSON: TypeAlias = "dict[str, Any]"

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024


@dataclass(slots=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any] | None = None

    def to_wire(self) -> JSON:
        msg: JSON = {"jsonrpc": "2.0", "id": self.id, "method": self.method}
        if self.params is not None:
            msg["params"] = self.params
        return msg


@dataclass(slots=True)
class Notification:
    method: str
    params: dict[str, Any] | None = None

    def to_wire(self) -> JSON:
        msg: JSON = {"jsonrpc": "2.0", "method": self.method}
        if self.params is not None:
            msg["params"] = self.params
        return msg


@dataclass(slots=True)
class Response:
    id: RequestId
    result: dict[str, Any]

    def to_wire(self) -> JSON:
        return {"jsonrpc": "2.0", "id": self.id, "result": self.result}


@dataclass(slots=True)
class ErrorResponse:
    id: RequestId | None
    error: MCPError

    def to_wire(self) -> JSON:
        return {"jsonrpc": "2.0", "id": self.id, "error": self.error.to_error()}


Message: TypeAlias = "Request | Notification | Response | ErrorResponse"


class InvalidMessage(ElicitkitError):
    """Incoming data that is not a valid message; ``reply`` is the error to send back, if any."""

    def __init__(self, error: MCPError, request_id: RequestId | None = None, *, reply: bool = True) -> None:
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id
        self.reply = reply

    def to_wire(self) -> JSON:
        return ErrorResponse(self.request_id, self.error).to_wire()


def valid_id(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def decode(data: bytes | bytearray | memoryview | str, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> Any:
    """Bytes to a JSON value; raises :class:`InvalidMessage` (-32700 / -32600) on bad input."""
    if len(data) > max_bytes:
        raise InvalidMessage(
            MCPError(INVALID_REQUEST, f"message of {len(data)} bytes exceeds the {max_bytes}-byte limit")
        )
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InvalidMessage(MCPError(PARSE_ERROR, f"Parse error: {exc}")) from None


def encode(message: JSON) -> bytes:
    """A wire dict to compact UTF-8 JSON (no newlines inside, safe for line framing)."""
    return orjson.dumps(message)


def parse(obj: Any) -> Message:
    """Validate a decoded JSON value as exactly one JSON-RPC 2.0 message."""
    if not isinstance(obj, dict):
        if isinstance(obj, list):
            raise InvalidMessage(MCPError(INVALID_REQUEST, "batches are not supported; send one message at a time"))
        raise InvalidMessage(MCPError(INVALID_REQUEST, "a JSON-RPC message must be a JSON object"))
    raw_id = obj.get("id")
    has_id = "id" in obj
    request_id: RequestId | None = raw_id if valid_id(raw_id) else None
    if obj.get("jsonrpc") != "2.0":
        raise InvalidMessage(MCPError(INVALID_REQUEST, 'the "jsonrpc" member must be exactly "2.0"'), request_id)
    if "method" in obj:  # a request or notification, even with a null method (JSON-RPC wants -32600 then)
        method = obj["method"]
        if not isinstance(method, str) or not method:
            raise InvalidMessage(MCPError(INVALID_REQUEST, '"method" must be a non-empty string'), request_id)
        params = obj.get("params")
        if params is not None and not isinstance(params, dict):
            raise InvalidMessage(MCPError(INVALID_PARAMS, '"params" must be an object'), request_id, reply=has_id)
        if not has_id:
            return Notification(method, params)
        if request_id is None:
            raise InvalidMessage(MCPError(INVALID_REQUEST, '"id" must be a string or an integer'))
        return Request(request_id, method, params)
    if not has_id:
        raise InvalidMessage(MCPError(INVALID_REQUEST, "message has neither a method nor an id"))
    if "result" in obj and "error" not in obj:
        result = obj["result"]
        if request_id is None or not isinstance(result, dict):
            raise InvalidMessage(MCPError(INVALID_REQUEST, "malformed response"), request_id, reply=False)
        return Response(request_id, result)
    if "error" in obj and "result" not in obj:
        error = obj["error"]
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            raise InvalidMessage(MCPError(INVALID_REQUEST, "malformed error response"), request_id, reply=False)
        return ErrorResponse(request_id, MCPError.from_error(error))
    raise InvalidMessage(
        MCPError(INVALID_REQUEST, "a response needs exactly one of result and error"), request_id, reply=False
    )
