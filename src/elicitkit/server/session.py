"""One client connection as the server sees it: handshake state, dispatch, and the way back.

Every transport makes one :class:`ServerSession` per client connection (stdio: the process;
HTTP: an ``Mcp-Session-Id``; in-memory: the pair) and feeds it what arrives. The session owns
the :class:`~elicitkit.peer.Peer`, answers ``initialize`` and ``ping`` itself and routes every
other request to the handler the server registered for its method.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from elicitkit.peer import IncomingRequest, Peer, Send
from elicitkit.protocol.capabilities import declares, elicitation_modes
from elicitkit.protocol.connection import Role
from elicitkit.protocol.errors import METHOD_NOT_FOUND, MCPError
from elicitkit.protocol.handshake import INITIALIZE, INITIALIZED, PING, ServerHandshake
from elicitkit.protocol.jsonrpc import DEFAULT_MAX_MESSAGE_BYTES, JSON, Notification, RequestId

if TYPE_CHECKING:
    from elicitkit.server.lowlevel import LowLevelServer

logger = logging.getLogger("elicitkit.server")

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class RequestContext:
    """What a request handler gets: the request, its session, and ways to talk back."""

    __slots__ = ("request", "session")

    def __init__(self, request: IncomingRequest, session: ServerSession) -> None:
        self.request = request
        self.session = session

    @property
    def params(self) -> dict[str, Any]:
        return self.request.params

    @property
    def request_id(self) -> RequestId:
        return self.request.id

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        await self.request.report_progress(progress, total, message)

    async def log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        """A ``notifications/message`` on this request's stream, if the client's level lets it through."""
        await self.session.log(level, data, logger_name, related=self.request.id)

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> JSON:
        return await self.session.send_request(method, params, timeout=timeout, related=self.request.id)

    def close_sse_stream(self, retry_ms: int = 1000) -> bool:
        """HTTP only: drop this request's SSE connection so the client polls back for the rest.

        Returns False where there is no such stream (stdio, in-memory, a JSON response).
        """
        hooks = self.session.transport_hooks
        return bool(hooks is not None and hooks.close_stream(self.request.id, retry_ms))


class ServerSession:
    """Server half of one connection."""

    def __init__(
        self, server: LowLevelServer, send: Send, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    ) -> None:
        self.server = server
        self.handshake = ServerHandshake()
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        # Set by transports that can do more than move messages (HTTP: close an SSE stream).
        self.transport_hooks: Any = None
        self.peer = Peer(
            Role.SERVER,
            send,
            on_request=self._on_request,
            on_notification=self._on_notification,
            max_message_bytes=max_message_bytes,
        )

    # -- what the client declared -----------------------------------------------------

    @property
    def protocol_version(self) -> str | None:
        return self.handshake.protocol_version

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.handshake.client_capabilities

    @property
    def client_info(self) -> dict[str, Any]:
        return self.handshake.client_info

    def client_declares(self, capability: str) -> bool:
        return declares(self.handshake.client_capabilities, capability)

    @property
    def elicitation_modes(self) -> frozenset[str]:
        return elicitation_modes(self.handshake.client_capabilities)

    # -- dispatch --------------------------------------------------------------------

    async def _on_request(self, request: IncomingRequest) -> JSON:
        method = request.method
        if method == INITIALIZE:
            return self.handshake.initialize(
                request.params,
                server_info=self.server.server_info,
                capabilities=self.server.capabilities(),
                instructions=self.server.instructions,
            )
        if method == PING:
            return {}
        self.handshake.admit(method)
        handler = self.server.request_handlers.get(method)
        if handler is None:
            raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return await handler(RequestContext(request, self))

    async def _on_notification(self, notification: Notification) -> None:
        if notification.method == INITIALIZED:
            self.handshake.initialized()
            return
        handler = self.server.notification_handlers.get(notification.method)
        if handler is not None:
            await handler(self, notification.params or {})

    # -- the way back ----------------------------------------------------------------

    async def send_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        related: RequestId | None = None,
    ) -> JSON:
        return await self.peer.request(method, params, timeout=timeout, related=related)

    async def send_notification(
        self, method: str, params: dict[str, Any] | None = None, *, related: RequestId | None = None
    ) -> None:
        await self.peer.notify(method, params, related=related)

    async def send_elicit_complete(self, elicitation_id: str, *, related: RequestId | None = None) -> None:
        """``notifications/elicitation/complete``: the URL elicitation ``elicitation_id`` finished."""
        await self.send_notification(
            "notifications/elicitation/complete", {"elicitationId": elicitation_id}, related=related
        )

    async def log(
        self, level: str, data: Any, logger_name: str | None = None, *, related: RequestId | None = None
    ) -> None:
        if self.log_level is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name:
            params["logger"] = logger_name
        await self.send_notification("notifications/message", params, related=related)
