"""One client connection as the server sees it: handshake state, dispatch, and the way back.

Every transport makes one :class:`ServerSession` per client connection (stdio: the process;
HTTP: an ``Mcp-Session-Id``; in-memory: the pair) and feeds it what arrives. The session owns
the :class:`~elicitkit.runtime.peer.Peer`, answers ``initialize`` and ``ping`` itself and routes every
other request to the handler the server registered for its method.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any

from elicitkit.protocol.capabilities import declares, elicitation_modes
from elicitkit.protocol.connection import Role
from elicitkit.protocol.errors import METHOD_NOT_FOUND, MCPError
from elicitkit.protocol.handshake import INITIALIZE, INITIALIZED, PING, ServerHandshake
from elicitkit.protocol.inbound import HANDSHAKE, Rejected, Stateless, classify_request
from elicitkit.protocol.jsonrpc import DEFAULT_MAX_MESSAGE_BYTES, JSON, Notification, RequestId
from elicitkit.protocol.modern import DISCOVER, Envelope, as_modern_error
from elicitkit.runtime.contract import Send, StreamControl
from elicitkit.runtime.peer import IncomingRequest, Peer
from elicitkit.server.scope import legacy_scope, modern_scope
from elicitkit.telemetry import hook as telemetry

if TYPE_CHECKING:
    from elicitkit.server.lowlevel import LowLevelServer

logger = logging.getLogger("elicitkit.server")

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


async def _ready(result: JSON) -> JSON:
    return result


class ServerSession:
    """Server half of one connection; its transport drives it as a
    :class:`~elicitkit.runtime.contract.SessionPort`."""

    def __init__(
        self,
        server: LowLevelServer,
        send: Send,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        streams: StreamControl | None = None,
        stateless: bool = False,
    ) -> None:
        self.server = server
        self.handshake = ServerHandshake()
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        # What the handshake settled about the client, in the shape a 2026 request carries it:
        # one object per session, shared by every request's scope (set by initialize).
        self.client = Envelope("", {}, {})
        # The transport's per-request streams, where it has them (HTTP: close an SSE stream early).
        self.streams = streams
        # Serve only 2026 requests (the shared session behind stateless HTTP).
        self.stateless = stateless
        # Who the transport authenticated when this (legacy) session opened: its requests act for them.
        self.principal: str | None = None
        self.peer = Peer(
            Role.SERVER,
            send,
            on_request=self._on_request,
            on_notification=self._on_notification,
            max_message_bytes=max_message_bytes,
        )
        if streams is not None:
            self.peer.on_unanswered = streams.request_unanswered
        # The port a transport drives: the peer's own bound methods, so no frame of ours sits
        # between a transport and the peer on the hot path.
        self.feed = self.peer.feed
        self.close = self.peer.close
        self.cancel = self.peer.cancel_incoming

    async def __aenter__(self) -> ServerSession:
        await self.peer.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        return await self.peer.__aexit__(*exc)

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

    def client_supports(self, capability: str) -> bool:
        return declares(self.handshake.client_capabilities, capability)

    @property
    def shared(self) -> bool:
        """Many callers share this session (the one stateless session behind HTTP): tell them
        apart by principal or claim, never by the session."""
        return self.stateless

    @property
    def elicitation_modes(self) -> frozenset[str]:
        return elicitation_modes(self.handshake.client_capabilities)

    # -- dispatch --------------------------------------------------------------------

    def _on_request(self, request: IncomingRequest) -> Awaitable[JSON]:
        """Route one request: the awaitable that answers it (errors may be raised right here).

        Not a coroutine of its own, so a long-running handler (one waiting for a person) does not
        keep a routing frame alive underneath it; the peer awaits what comes back. The era was
        decided once, by the HTTP transport or (stdio, in-memory) right here.
        """
        inbound = request.inbound
        if inbound is None:
            inbound = classify_request(request.method, request.params, stateless=self.stateless)
        if telemetry.current is not None:
            self._annotate(request, inbound)
        if inbound is not HANDSHAKE:
            if type(inbound) is Stateless:
                assert inbound.envelope is not None  # requests always carry one
                return self._serve_modern(request, inbound.envelope, inbound.principal)
            assert type(inbound) is Rejected
            raise inbound.error
        method = request.method
        if method == INITIALIZE:
            result = self.handshake.initialize(
                request.params,
                server_info=self.server.server_info,
                capabilities=self.server.capabilities(),
                instructions=self.server.instructions,
            )
            handshake = self.handshake
            self.client = Envelope(
                handshake.protocol_version or "", handshake.client_capabilities, handshake.client_info
            )
            if telemetry.current is not None:  # what this session's own requests (questions) are known by
                known = {"mcp.protocol.version": handshake.protocol_version}
                if self.streams is not None and self.streams.session_id:
                    known["mcp.session.id"] = self.streams.session_id
                self.peer.span_attributes = known
            return _ready(result)
        if method == PING:
            return _ready({})
        self.handshake.admit(method)
        handler = self.server.request_handlers.get(method)
        if handler is None:
            raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return handler(legacy_scope(request, self))

    def _annotate(self, request: IncomingRequest, inbound: object) -> None:
        """What the server span learns from the session: its id, the protocol, the transport."""
        assert telemetry.current is not None
        streams = self.streams
        envelope = inbound.envelope if type(inbound) is Stateless else None
        version = envelope.protocol_version if envelope is not None else self.handshake.protocol_version
        public = streams.public_id(request.id) if streams is not None else None
        telemetry.current.annotate(
            {
                "mcp.session.id": (streams.session_id or None) if streams is not None else None,
                "mcp.protocol.version": version or None,
                "jsonrpc.request.id": str(public) if public is not None else None,
                "network.transport": "tcp" if streams is not None else None,
                "network.protocol.name": "http" if streams is not None else None,
            }
        )

    async def _serve_modern(self, request: IncomingRequest, envelope: Envelope, principal: str | None) -> JSON:
        """A 2026-07-28 request, already checked (:mod:`elicitkit.protocol.inbound`), served
        without any session state."""
        method = request.method
        if method == DISCOVER:
            return self.server.discover_result()
        handler = self.server.request_handlers.get(method)
        if handler is None:
            raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")
        try:
            result = await handler(modern_scope(request, self, envelope, principal))
        except MCPError as exc:
            answer = as_modern_error(exc)
            if answer is exc:
                raise
            raise answer from None
        return self.server.finish_modern_result(method, result)

    async def _on_notification(self, notification: Notification) -> None:
        if notification.method == INITIALIZED:
            self.handshake.initialized()
            return
        handler = self.server.notification_handlers.get(notification.method)
        if handler is not None:
            await handler(self, notification.params or {})

    # -- the way back ----------------------------------------------------------------

    def send_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        related: RequestId | None = None,
    ) -> Coroutine[Any, Any, JSON]:
        """A request to the client (await it); the peer's own coroutine, no frame of ours around it."""
        return self.peer.request(method, params, timeout=timeout, related=related)

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
        self,
        level: str,
        data: Any,
        logger_name: str | None = None,
        *,
        related: RequestId | None = None,
        threshold: str | None = None,
    ) -> None:
        """Log to the client at ``level`` if it passes ``threshold`` (default: the session's level)."""
        limit = threshold if threshold is not None else self.log_level
        if limit not in LOG_LEVELS or LOG_LEVELS.index(level) < LOG_LEVELS.index(limit):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name:
            params["logger"] = logger_name
        await self.send_notification("notifications/message", params, related=related)
