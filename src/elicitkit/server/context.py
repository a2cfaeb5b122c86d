"""The :class:`Context` a tool, resource or prompt asks for by type to talk back mid-call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from elicitkit.protocol.capabilities import declares
from elicitkit.protocol.jsonrpc import RequestId
from elicitkit.server.session import RequestContext, ServerSession

if TYPE_CHECKING:
    from elicitkit.server.framework import Server


class Context:
    """Add a parameter typed ``Context`` to any handler and it is injected (never in the schema).

    It knows the request (id, progress token, ``_meta``), the session (negotiated version,
    client capabilities and info) and can log, report progress and read resources.
    """

    __slots__ = ("_request", "server")

    def __init__(self, request: RequestContext, server: Server) -> None:
        self._request = request
        self.server = server

    # -- who is asking ---------------------------------------------------------------

    @property
    def request_context(self) -> RequestContext:
        return self._request

    @property
    def session(self) -> ServerSession:
        return self._request.session

    @property
    def request_id(self) -> RequestId:
        return self._request.request_id

    @property
    def meta(self) -> dict[str, Any]:
        return self._request.request.meta

    @property
    def protocol_version(self) -> str | None:
        return self.session.protocol_version

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.session.client_capabilities

    @property
    def client_info(self) -> dict[str, Any]:
        return self.session.client_info

    def client_supports(self, capability: str) -> bool:
        return declares(self.session.client_capabilities, capability)

    # -- talking back ----------------------------------------------------------------

    async def log(self, level: str, message: Any, *, logger: str | None = None) -> None:
        """A log notification to the client (filtered by the level it set)."""
        await self._request.log(level, message, logger)

    async def debug(self, message: Any, *, logger: str | None = None) -> None:
        await self.log("debug", message, logger=logger)

    async def info(self, message: Any, *, logger: str | None = None) -> None:
        await self.log("info", message, logger=logger)

    async def warning(self, message: Any, *, logger: str | None = None) -> None:
        await self.log("warning", message, logger=logger)

    async def error(self, message: Any, *, logger: str | None = None) -> None:
        await self.log("error", message, logger=logger)

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Progress for this request, if the client asked for it (sent a progress token)."""
        await self._request.report_progress(progress, total, message)

    def close_sse_stream(self, retry_ms: int = 1000) -> bool:
        """HTTP: end this call's SSE connection now; the client reconnects and gets the rest."""
        return self._request.close_sse_stream(retry_ms)

    async def read_resource(self, uri: str) -> list[dict[str, Any]]:
        """Read one of this server's own resources: its ``contents`` list."""
        result = await self.server.read_resource(uri, self)
        contents: list[dict[str, Any]] = result["contents"]
        return contents
