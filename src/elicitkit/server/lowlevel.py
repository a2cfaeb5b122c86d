"""The low-level server: one handler per JSON-RPC method, nothing inferred from type hints.

It is the layer the decorator framework is built on, and small enough to test the protocol
core through. A handler takes a :class:`~elicitkit.server.scope.RequestScope` and returns
the result dict; raising :class:`~elicitkit.MCPError` answers with that error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from elicitkit.protocol.jsonrpc import DEFAULT_MAX_MESSAGE_BYTES, JSON
from elicitkit.protocol.versions import META_SERVER_INFO, SUPPORTED_VERSIONS
from elicitkit.runtime.contract import ASGIApp, Send, StreamControl
from elicitkit.server.scope import RequestScope
from elicitkit.server.session import LOG_LEVELS, ServerSession
from elicitkit.telemetry import hook as telemetry

if TYPE_CHECKING:
    from elicitkit.backplane.base import Backplane
    from elicitkit.server.auth.connections import Connections
    from elicitkit.server.auth.gate import ResourceServer

RequestHandlerFn = Callable[[RequestScope], Awaitable[JSON]]
NotificationHandlerFn = Callable[[ServerSession, dict[str, Any]], Awaitable[None]]
F = TypeVar("F", bound=Callable[..., Any])

_CACHEABLE = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"})
_CAPABILITY_OF_PREFIX = {"tools/": "tools", "resources/": "resources", "prompts/": "prompts"}


async def _set_level(ctx: RequestScope) -> JSON:
    from elicitkit.protocol.errors import INVALID_PARAMS, MCPError

    level = ctx.params.get("level")
    if level not in LOG_LEVELS:
        raise MCPError(INVALID_PARAMS, f"unknown log level {level!r}; expected one of {', '.join(LOG_LEVELS)}")
    ctx.session.log_level = level
    return {}


class LowLevelServer:
    """A registry of method handlers plus the identity a server shows in ``initialize``."""

    #: What the instances of a fleet share (:class:`~elicitkit.server.Server` sets it); a low-level
    #: server has none of its own, so its pages and state stay in this process.
    backplane: Backplane | None = None

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        capabilities: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.extra_capabilities = capabilities or {}
        self.request_handlers: dict[str, RequestHandlerFn] = {"logging/setLevel": _set_level}
        self.notification_handlers: dict[str, NotificationHandlerFn] = {}
        # The OAuth resource server in front of HTTP (None: requests need no token).
        self.auth: ResourceServer | None = None
        self.connections: Connections | None = None  # third-party sign-in (ctx.authorize)
        telemetry.auto()  # on when an OpenTelemetry SDK is configured; else nothing, not even an import

    @property
    def server_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title:
            info["title"] = self.title
        return info

    def capabilities(self) -> dict[str, Any]:
        """Declared capabilities: whatever the handlers imply, overlaid with explicit ones."""
        caps: dict[str, Any] = {"logging": {}}
        for method in self.request_handlers:
            for prefix, cap in _CAPABILITY_OF_PREFIX.items():
                if method.startswith(prefix):
                    caps.setdefault(cap, {})
            if method == "completion/complete":
                caps["completions"] = {}
        for key, value in self.extra_capabilities.items():
            caps[key] = {**caps.get(key, {}), **value} if isinstance(value, dict) else value
        return caps

    # -- 2026-07-28 ------------------------------------------------------------------

    cache_ttl_ms = 60_000  # how long a client may reuse list and discover results
    max_questions = 100  # questions one request may put to the user (a runaway loop ends here)
    page_ladder = False  # a page fallback or deadline is configured (configure_pages): asking checks the ladder

    def modern_capabilities(self) -> dict[str, Any]:
        """What a 2026 client is told: no logging/setLevel, no subscriptions, no list_changed."""
        caps = {k: v for k, v in self.capabilities().items() if k != "logging"}
        for name in ("tools", "prompts", "resources"):
            if isinstance(caps.get(name), dict):
                caps[name] = {}
        return caps

    def discover_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "resultType": "complete",
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": self.modern_capabilities(),
            "ttlMs": self.cache_ttl_ms,
            "cacheScope": "public",
            "_meta": {META_SERVER_INFO: self.server_info},
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def finish_modern_result(self, method: str, result: JSON) -> JSON:
        """Every 2026 result says what it is; list results say how long they may be cached."""
        result.setdefault("resultType", "complete")
        if result["resultType"] == "complete" and method in _CACHEABLE:
            result.setdefault("ttlMs", self.cache_ttl_ms if method != "resources/read" else 0)
            result.setdefault("cacheScope", "public" if method != "resources/read" else "private")
        meta = result.setdefault("_meta", {})
        if isinstance(meta, dict):
            meta.setdefault(META_SERVER_INFO, self.server_info)
        return result

    def tool_header_params(self, name: str) -> dict[str, str]:
        """``x-mcp-header`` arguments of tool ``name`` (the HTTP transport checks their headers)."""
        return {}

    def serve_pages(
        self, prefix: str, base_url: str | None, allow_host: Callable[[str], bool] | None = None
    ) -> ASGIApp:
        """Called by an HTTP transport once bound: the ASGI app of this server's form pages, served
        at ``prefix`` beside the endpoint (:mod:`elicitkit.server.pages`)."""
        from elicitkit.server.pages import pages_of  # the page app and its renderer: only when served

        app = pages_of(self).mount(prefix, base_url, allow_host)
        if self.connections is not None:  # third-party sign-in: its start page and callback go beside them
            return self.connections.serve(self, app)
        return app

    def http_backplane(self) -> Backplane | None:
        """What HTTP serving shares with a fleet: a low-level server leaves it to the transport."""
        return None

    def http_gate(self, app: ASGIApp, open_prefix: str) -> ASGIApp:
        """The endpoint behind this server's resource server (``auth``), if it has one; paths
        under ``open_prefix`` (the question pages) are opened by browsers and pass untouched."""
        if self.auth is None:
            return app
        return self.auth.wrap(app, open_prefix)

    def set_request_handler(self, method: str, handler: RequestHandlerFn) -> None:
        self.request_handlers[method] = handler

    def request_handler(self, method: str) -> Callable[[F], F]:
        """Decorator form of :meth:`set_request_handler`."""

        def register(fn: F) -> F:
            self.set_request_handler(method, fn)
            return fn

        return register

    def notification_handler(self, method: str) -> Callable[[F], F]:
        def register(fn: F) -> F:
            self.notification_handlers[method] = fn
            return fn

        return register

    def create_session(
        self,
        send: Send,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        streams: StreamControl | None = None,
        stateless: bool = False,
    ) -> ServerSession:
        """A session for one connection (see :class:`~elicitkit.runtime.contract.Endpoint`)."""
        return ServerSession(self, send, max_message_bytes=max_message_bytes, streams=streams, stateless=stateless)
