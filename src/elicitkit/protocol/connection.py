"""The sans-I/O JSON-RPC connection: id correlation in both directions, cancellation, progress.

Feed it what arrived (:meth:`Connection.receive_data` for bytes, :meth:`Connection.receive`
for a decoded value); it answers with events. Ask it for outgoing messages
(:meth:`Connection.start_request`, :meth:`Connection.respond`, ...); it keeps the books and
hands back wire dicts. It never reads a socket or a clock, in the spirit of h11: every
transport and the async runtime sit on top of this one piece of state.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeAlias

from elicitkit.protocol.errors import INVALID_REQUEST, LocalProtocolError, MCPError
from elicitkit.protocol.jsonrpc import (
    DEFAULT_MAX_MESSAGE_BYTES,
    JSON,
    ErrorResponse,
    InvalidMessage,
    Notification,
    Request,
    RequestId,
    Response,
    decode,
    parse,
    valid_id,
)

CANCELLED = "notifications/cancelled"
PROGRESS = "notifications/progress"

# Requests that may never be cancelled (the spec says so for initialize).
_UNCANCELLABLE = frozenset({"initialize"})


class Role(StrEnum):
    CLIENT = "client"
    SERVER = "server"


# ----------------------------------------------------------------------------- events


@dataclass(slots=True)
class RequestReceived:
    request: Request


@dataclass(slots=True)
class NotificationReceived:
    notification: Notification


@dataclass(slots=True)
class ResponseReceived:
    request_id: RequestId
    method: str
    result: dict[str, Any]


@dataclass(slots=True)
class ErrorReceived:
    request_id: RequestId
    method: str
    error: MCPError


@dataclass(slots=True)
class CancelReceived:
    """The peer cancelled a request it sent us that is still running here."""

    request_id: RequestId
    reason: str | None


@dataclass(slots=True)
class ProgressReceived:
    request_id: RequestId
    token: str | int
    progress: float
    total: float | None
    message: str | None


@dataclass(slots=True)
class SendReply:
    """The core answers invalid input itself; the runtime just has to send this."""

    message: JSON


@dataclass(slots=True)
class Dropped:
    """Input that is ignored by design (late or unknown response, stale cancel); worth a log line."""

    reason: str
    message: Any = None


Event: TypeAlias = (
    "RequestReceived | NotificationReceived | ResponseReceived | ErrorReceived"
    " | CancelReceived | ProgressReceived | SendReply | Dropped"
)


@dataclass(slots=True)
class _Outgoing:
    method: str
    progress_token: str | int | None


class Connection:
    """Bookkeeping for one JSON-RPC peer-to-peer connection."""

    __slots__ = ("_abandoned", "_in_flight", "_next_id", "_outgoing", "_progress", "max_message_bytes", "role")

    def __init__(self, role: Role, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, first_id: int = 0) -> None:
        self.role = role
        self.max_message_bytes = max_message_bytes
        self._next_id = first_id
        self._outgoing: dict[RequestId, _Outgoing] = {}
        self._progress: dict[str | int, RequestId] = {}
        # Requests the peer sent us that have not been answered; value: cancelled?
        self._in_flight: dict[RequestId, bool] = {}
        # Our requests we stopped waiting for, so a late answer is told apart from a bogus one.
        self._abandoned: OrderedDict[RequestId, str] = OrderedDict()

    # ------------------------------------------------------------------ incoming

    def receive_data(self, data: bytes | str) -> list[Event]:
        """One framed message's bytes."""
        try:
            obj = decode(data, self.max_message_bytes)
        except InvalidMessage as exc:
            return [SendReply(exc.to_wire())]
        return self.receive(obj)

    def receive(self, obj: Any) -> list[Event]:
        """One decoded JSON value."""
        # The answer to one of our requests, the commonest message a client reads: taken here
        # without the general parse (the same checks, in the order that settles it soonest).
        # Anything unusual (an error, a stray id, a malformed member) goes the general way.
        if type(obj) is dict and "result" in obj and "method" not in obj and "error" not in obj:
            request_id = obj.get("id")
            result = obj["result"]
            if type(result) is dict and (type(request_id) is int or type(request_id) is str):
                pending = self._outgoing.get(request_id)
                if pending is not None and obj.get("jsonrpc") == "2.0":
                    del self._outgoing[request_id]
                    if pending.progress_token is not None:
                        self._progress.pop(pending.progress_token, None)
                    return [ResponseReceived(request_id, pending.method, result)]
        try:
            msg = parse(obj)
        except InvalidMessage as exc:
            if exc.reply:
                return [SendReply(exc.to_wire())]
            return [Dropped(exc.error.message, obj)]
        if type(msg) is Request:
            if msg.id in self._in_flight:
                err = MCPError(INVALID_REQUEST, f"request id {msg.id!r} is already in use by a running request")
                return [SendReply(ErrorResponse(msg.id, err).to_wire())]
            self._in_flight[msg.id] = False
            return [RequestReceived(msg)]
        if type(msg) is Response:
            return [self._settle(msg.id, msg)]
        if type(msg) is ErrorResponse:
            if msg.id is None:
                return [Dropped(f"peer reported an error: {msg.error.message}", obj)]
            return [self._settle(msg.id, msg)]
        assert type(msg) is Notification
        if msg.method == CANCELLED:
            return [self._on_cancel(msg.params or {})]
        if msg.method == PROGRESS:
            return [self._on_progress(msg)]
        return [NotificationReceived(msg)]

    def _settle(self, request_id: RequestId, msg: Response | ErrorResponse) -> Event:
        pending = self._outgoing.pop(request_id, None)
        if pending is None:
            why = self._abandoned.pop(request_id, None)
            if why is not None:
                return Dropped(f"late response to request {request_id!r} ({why})", msg)
            return Dropped(f"response to unknown request id {request_id!r}", msg)
        if pending.progress_token is not None:
            self._progress.pop(pending.progress_token, None)
        if type(msg) is Response:
            return ResponseReceived(request_id, pending.method, msg.result)
        assert type(msg) is ErrorResponse
        return ErrorReceived(request_id, pending.method, msg.error)

    def _on_cancel(self, params: dict[str, Any]) -> Event:
        request_id = params.get("requestId")
        reason = params.get("reason")
        if not valid_id(request_id) or request_id not in self._in_flight:
            return Dropped(f"cancellation for a request that is not running: {request_id!r}")
        if self._in_flight[request_id]:
            return Dropped(f"request {request_id!r} was already cancelled")
        self._in_flight[request_id] = True
        return CancelReceived(request_id, reason if isinstance(reason, str) else None)

    def _on_progress(self, msg: Notification) -> Event:
        params = msg.params or {}
        token = params.get("progressToken")
        progress = params.get("progress")
        if not valid_id(token) or token not in self._progress:
            return Dropped(f"progress for an unknown token: {token!r}")
        if not isinstance(progress, (int, float)) or isinstance(progress, bool):
            return Dropped("progress notification without a numeric progress")
        total = params.get("total")
        message = params.get("message")
        return ProgressReceived(
            self._progress[token],
            token,
            float(progress),
            float(total) if isinstance(total, (int, float)) and not isinstance(total, bool) else None,
            message if isinstance(message, str) else None,
        )

    # ------------------------------------------------------------------ outgoing

    def start_request(self, method: str, params: dict[str, Any] | None = None, progress: bool = False) -> Request:
        """Allocate an id and remember the request; with ``progress`` a token (the id) is attached."""
        request_id = self._next_id
        self._next_id += 1
        token: int | None = None
        if progress:
            token = request_id
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = token
            params["_meta"] = meta
            self._progress[token] = request_id
        self._outgoing[request_id] = _Outgoing(method, token)
        return Request(request_id, method, params)

    def abandon_request(self, request_id: RequestId, reason: str) -> Notification | None:
        """Stop waiting for our request (timeout, caller cancelled); returns the cancel to send."""
        pending = self._outgoing.pop(request_id, None)
        if pending is None:
            return None
        if pending.progress_token is not None:
            self._progress.pop(pending.progress_token, None)
        self._abandoned[request_id] = reason
        if len(self._abandoned) > 1024:
            self._abandoned.popitem(last=False)
        if pending.method in _UNCANCELLABLE:
            return None
        return Notification(CANCELLED, {"requestId": request_id, "reason": reason})

    def respond(self, request_id: RequestId, result: dict[str, Any]) -> Response | None:
        """The answer to a peer's request, or None when the peer cancelled it (send nothing)."""
        if self._finish(request_id):
            return Response(request_id, result)
        return None

    def respond_error(self, request_id: RequestId, error: MCPError) -> ErrorResponse | None:
        if self._finish(request_id):
            return ErrorResponse(request_id, error)
        return None

    def _finish(self, request_id: RequestId) -> bool:
        try:
            cancelled = self._in_flight.pop(request_id)
        except KeyError:
            raise LocalProtocolError(f"no running request with id {request_id!r} to answer") from None
        return not cancelled

    def mark_cancelled(self, request_id: RequestId) -> bool:
        """Treat a running peer request as cancelled (its transport went away); no answer is sent."""
        if self._in_flight.get(request_id) is False:
            self._in_flight[request_id] = True
            return True
        return False

    def discard(self, request_id: RequestId) -> None:
        """Forget a peer request we will never answer (it was cancelled)."""
        self._in_flight.pop(request_id, None)

    def fail_all(self) -> list[RequestId]:
        """The connection ended: forget everything, return our requests that now fail."""
        ids = list(self._outgoing)
        self._outgoing.clear()
        self._progress.clear()
        self._in_flight.clear()
        return ids

    # ------------------------------------------------------------------ introspection

    @property
    def pending_outgoing(self) -> int:
        return len(self._outgoing)

    @property
    def running_incoming(self) -> int:
        return len(self._in_flight)

    def is_running(self, request_id: RequestId) -> bool:
        return request_id in self._in_flight and not self._in_flight[request_id]
