"""The :class:`Context` a tool, resource or prompt asks for by type to talk back mid-call.

It is the one public per-request face; it stands on the request's
:class:`~elicitkit.server.scope.RequestScope` (one kind per way of asking) and asks through
:mod:`elicitkit.server.asking` (capabilities, counting, the page ladder), which leaves "send
now" or "add to the round" to the scope.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar, overload

from elicitkit.elicitation.errors import SchemaError
from elicitkit.elicitation.requests import UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.elicitation.schema import form_for, form_from_schema
from elicitkit.protocol.jsonrpc import RequestId
from elicitkit.server import asking
from elicitkit.server.scope import RequestScope

if TYPE_CHECKING:
    from elicitkit.server.server import Server
    from elicitkit.server.session import ServerSession

T = TypeVar("T")


async def _raise(exc: Exception) -> Any:
    raise exc


class Context:
    """Add a parameter typed ``Context`` to any handler and it is injected (never in the schema).

    It knows the request (id, progress token, ``_meta``), the session (negotiated version,
    client capabilities and info) and can log, report progress and read resources.
    """

    __slots__ = ("_scope", "server")

    def __init__(self, scope: RequestScope, server: Server) -> None:
        self._scope = scope
        self.server = server

    # -- who is asking ---------------------------------------------------------------

    @property
    def request_context(self) -> RequestScope:
        """The request's scope (what low-level handlers get): session, round, raw ``send_request``."""
        return self._scope

    @property
    def session(self) -> ServerSession:
        return self._scope.session

    @property
    def principal(self) -> str | None:
        """Who this request acts for: the verified token's subject (``"sub via client"``) when the
        server has ``auth``; None on stdio and without auth. Tasks, pages, rounds and legacy
        sessions are bound to it."""
        return self._scope.principal

    @property
    def request_id(self) -> RequestId:
        return self._scope.request_id

    @property
    def meta(self) -> dict[str, Any]:
        return self._scope.request.meta

    @property
    def protocol_version(self) -> str | None:
        """The version this request speaks (2026: from its envelope; handshake: negotiated)."""
        return self._scope.protocol_version

    @property
    def session_id(self) -> str | None:
        """The Streamable HTTP session (``Mcp-Session-Id``, 2025 eras; else None), for what ends
        outside this request: a webhook on any instance calls
        ``server.notify_elicitation_complete(session_id, elicitation_id)``."""
        streams = self.session.streams
        return streams.session_id or None if streams is not None else None

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self._scope.client_capabilities

    @property
    def client_info(self) -> dict[str, Any]:
        return self._scope.client_info

    def client_supports(self, capability: str) -> bool:
        """Whether the client declared ``capability`` (2026: in this request; before: in ``initialize``)."""
        return self._scope.client_supports(capability)

    # -- talking back ----------------------------------------------------------------

    async def log(self, level: str, message: Any, *, logger: str | None = None) -> None:
        """A log notification to the client (filtered by the level it set)."""
        await self._scope.log(level, message, logger)

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
        await self._scope.report_progress(progress, total, message)

    # -- asking the user ------------------------------------------------------------

    @overload
    def elicit(
        self,
        message: str,
        schema: type[T],
        *,
        timeout: float | None = None,
        max_attempts: int = 1,
        key: str | None = None,
        via: str | None = None,
        fallback: str | None = None,
        deadline: float | None = None,
    ) -> Coroutine[Any, Any, ElicitationResult[T]]: ...

    @overload
    def elicit(
        self,
        message: str,
        schema: Any,
        *,
        timeout: float | None = None,
        max_attempts: int = 1,
        key: str | None = None,
        via: str | None = None,
        fallback: str | None = None,
        deadline: float | None = None,
    ) -> Coroutine[Any, Any, ElicitationResult[Any]]: ...

    def elicit(
        self,
        message: str,
        schema: Any,
        *,
        timeout: float | None = None,
        max_attempts: int = 1,
        key: str | None = None,
        via: str | None = None,
        fallback: str | None = None,
        deadline: float | None = None,
    ) -> Coroutine[Any, Any, ElicitationResult[Any]]:
        """Ask the user mid-call (await it). ``schema``: a flat pydantic model, or a scalar type to ask for one value.

        Returns :class:`AcceptedElicitation` (``.data`` validated, typed), :class:`DeclinedElicitation`
        or :class:`CancelledElicitation`. Raises :class:`SchemaError` (bad schema, nothing sent),
        :class:`ElicitationUnsupported` (the client cannot be asked), :class:`ElicitationTimeout`
        (``timeout`` seconds passed, default :data:`~elicitkit.server.asking.DEFAULT_TIMEOUT`),
        :class:`InvalidAnswer` (the answer did not fit, after ``max_attempts`` tries).

        On a 2026-07-28 connection the call ends with the question and runs again when the answer
        comes back: the code before each question must be safe to re-run (see
        :mod:`elicitkit.server.rounds.round`). ``key`` names the question there (default ``q1``, ``q2``...).

        ``via="web"``: ask on the server's own page (:mod:`elicitkit.server.pages`) through a
        URL-mode question, so the answer never passes through the client or the model: the way
        to collect an API key or a password (the spec forbids asking for those in form mode).
        ``fallback="page"``: a client without form mode gets the page (as a URL question, or a
        result with the link; the same call made again continues with the answer), and so does
        one that does not answer within ``deadline`` seconds; ``"error"``: raise as before.

        (A plain method handing back the asking coroutine, so a question that waits for a person
        keeps no frame of this method alive; errors still surface when it is awaited.)
        """
        try:
            form = form_for(schema)
        except Exception as exc:  # a bad schema: raised where the question is awaited, as always
            return _raise(exc)
        return asking.ask_form(
            self._scope,
            message,
            form,
            timeout=timeout,
            max_attempts=max_attempts,
            key=key,
            via=via,
            fallback=fallback,
            deadline=deadline,
        )

    async def request_elicitation(
        self, message: str, requested_schema: dict[str, Any], *, timeout: float | None = None
    ) -> ElicitationResult[dict[str, Any]]:
        """The same question with a hand-written ``requestedSchema``; answers come back as dicts.

        A schema outside the spec's subset raises :class:`MCPError` ``-32602`` before sending.
        """
        try:
            form = form_from_schema(requested_schema)
        except SchemaError as exc:
            raise exc.to_mcp_error() from None
        return await asking.ask_form(self._scope, message, form, timeout=timeout)

    async def elicit_url(
        self,
        message: str,
        url: str,
        elicitation_id: str | None = None,
        *,
        timeout: float | None = None,
        key: str | None = None,
    ) -> ElicitationResult[None]:
        """Send the user to ``url`` (out of band). ``accept`` = they agreed to go, not that they finished."""
        request = UrlRequest(message, url, elicitation_id) if elicitation_id else UrlRequest(message, url)
        return await asking.ask_url(self._scope, request, timeout=timeout, key=key)

    async def request_input(self, method: str, params: dict[str, Any], *, key: str | None = None) -> Any:
        """Any input request (``sampling/createMessage``, ``roots/list``...) on either era; raw result."""
        return await asking.request_input(self._scope, method, params, key=key)

    async def request_inputs(self, requests: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        """Several input requests at once, keyed: on 2026 they all go out in the same round."""
        return await asking.request_inputs(self._scope, requests)

    async def sample(self, prompt: str, *, max_tokens: int = 100, key: str | None = None) -> Any:
        """Ask the client's model (``sampling/createMessage``) with one user message."""
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": max_tokens}
        return await self.request_input("sampling/createMessage", params, key=key)

    async def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """The client's roots (``roots/list``)."""
        result = await self.request_input("roots/list", {}, key=key)
        roots = result.get("roots") if isinstance(result, dict) else None
        return roots if isinstance(roots, list) else []

    async def run_as_task(self) -> None:
        """Carry on as a task (Tasks extension) once the questions asked so far are answered.

        Only for a tool registered with ``task=..., ask_before_task=True`` and a 2026 request
        that declares the extension; anywhere else (an ordinary call, a run that already is the
        task) it returns at once and the body simply carries on.
        """
        self._scope.become_task(self.server.tasks)

    async def authorize(
        self, provider: str, *, message: str | None = None, timeout: float | None = None, wait: bool = True
    ) -> str:
        """A valid access token of this request's principal at ``provider`` (one of the server's
        ``connections``), refreshed when near its end; when there is none, the person is asked to
        connect their account through URL mode (the server's own start page, then the provider's
        sign-in) and the call carries on with the new token.

        ``wait=False``: the call does not wait for the sign-in: -32042 on 2025-11-25 (the completion
        notice follows), the round's URL input on 2026; the person's next call finds the token. A
        client that cannot open URLs gets a result with the link. Raises
        :class:`~elicitkit.server.auth.ConnectionFailed` when nothing was connected (declined,
        refused by the provider, another account, nobody in ``timeout`` seconds).
        """
        from elicitkit.server.auth.connections.asking import authorize

        return await authorize(self, provider, message=message, timeout=timeout, wait=wait)

    async def elicit_complete(self, elicitation_id: str) -> None:
        """Tell the client the out-of-band step of ``elicitation_id`` is done."""
        await self.session.send_elicit_complete(elicitation_id, related=self.request_id)

    def close_sse_stream(self, retry_ms: int = 1000) -> bool:
        """HTTP: end this call's SSE connection now; the client reconnects and gets the rest."""
        return self._scope.close_sse_stream(retry_ms)

    async def read_resource(self, uri: str) -> list[dict[str, Any]]:
        """Read one of this server's own resources: its ``contents`` list."""
        result = await self.server.read_resource(uri, self)
        contents: list[dict[str, Any]] = result["contents"]
        return contents
