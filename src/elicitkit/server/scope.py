"""One request as the server serves it: the per-request scope, built once per era.

The two eras describe the client in different places: a handshake session (2025-11-25 and
before) learned it once, in ``initialize``; a 2026-07-28 request carries it in its envelope.
:func:`legacy_scope` and :func:`modern_scope` copy those facts into one :class:`RequestScope`,
so nothing downstream asks where they came from. A 2026 request that may ask for input also
gets its :class:`~elicitkit.server.rounds.round.InputRound` here (:meth:`RequestScope.open_round`).

Low-level handlers receive the scope; :class:`~elicitkit.server.context.Context` (the public
face user functions see) stands on it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, ClassVar

from elicitkit.protocol.capabilities import declares, elicitation_modes
from elicitkit.protocol.jsonrpc import JSON, RequestId
from elicitkit.protocol.modern import Envelope
from elicitkit.runtime.peer import IncomingRequest
from elicitkit.server.rounds.round import InputRound
from elicitkit.server.rounds.sealing import StateCodec

if TYPE_CHECKING:
    from elicitkit.server.session import ServerSession


class RequestScope:
    """What a request handler gets: the request, its session, the client as this request sees it
    (``client``: a 2026 request's envelope, or the handshake's facts), and on 2026 the round.

    Built only by :func:`legacy_scope` or :func:`modern_scope`; the two eras differ in the
    subclass they make, never in a flag checked downstream of here. Kept small: a request
    parked on a person holds its scope for as long as it waits.
    """

    __slots__ = ("asked", "client", "request", "session")

    modern: ClassVar[bool]
    round: InputRound | None

    def __init__(self, request: IncomingRequest, session: ServerSession, client: Envelope) -> None:
        self.request = request
        self.session = session
        self.client = client
        self.asked = 0  # questions put so far (the server caps them per request)

    @property
    def params(self) -> dict[str, Any]:
        return self.request.params

    @property
    def request_id(self) -> RequestId:
        return self.request.id

    @property
    def protocol_version(self) -> str | None:
        return self.client.protocol_version or None  # None: no handshake has settled one

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.client.client_capabilities

    @property
    def client_info(self) -> dict[str, Any]:
        return self.client.client_info

    @property
    def elicitation_modes(self) -> frozenset[str]:
        return elicitation_modes(self.client.client_capabilities)

    def client_supports(self, capability: str) -> bool:
        """Whether the client declared ``capability`` (for this request on 2026, for the session before)."""
        return declares(self.client.client_capabilities, capability)

    def open_round(
        self, codec: StateCodec, principal: Callable[[RequestScope], str | None] | None = None
    ) -> InputRound | None:
        """2026: the round of a request that may ask (answers in, questions out); None on a handshake."""
        return None

    # -- talking back ---------------------------------------------------------------------

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        await self.request.report_progress(progress, total, message)

    def _log_threshold(self) -> str | None:
        return self.session.log_level

    async def log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        """A ``notifications/message`` on this request's stream, if the client's level lets it through.

        2026: only when this request asked for a level in ``_meta``; handshake: the session's level
        (which ``logging/setLevel`` may change while the request runs).
        """
        threshold = self._log_threshold()
        await self.session.log(level, data, logger_name, related=self.request.id, threshold=threshold)

    def send_request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Coroutine[Any, Any, JSON]:
        """A request to the client on behalf of this one (await it).

        A plain function handing back the peer's coroutine: a request parked on a person keeps
        every frame it waits in, and a pass-through frame here would be one more for nothing.
        """
        return self.session.send_request(method, params, timeout=timeout, related=self.request.id)

    def close_sse_stream(self, retry_ms: int = 1000) -> bool:
        """HTTP only: drop this request's SSE connection so the client polls back for the rest.

        Returns False where there is no such stream (stdio, in-memory, a JSON response).
        """
        streams = self.session.streams
        return streams is not None and streams.close_stream(self.request.id, retry_ms)


class _HandshakeScope(RequestScope):
    """A handshake-era request: questions are sent now, on the session's back channel."""

    __slots__ = ()

    modern = False
    round = None


class _StatelessScope(RequestScope):
    """A 2026-07-28 request: questions go into its round."""

    __slots__ = ("principal", "round")

    modern = True

    def __init__(
        self, request: IncomingRequest, session: ServerSession, client: Envelope, principal: str | None = None
    ) -> None:
        # The base's assignments inline: one call fewer per request.
        self.request = request
        self.session = session
        self.client = client
        self.asked = 0
        self.round: InputRound | None = None
        self.principal = principal  # who the transport authenticated (HTTP), if anyone

    def open_round(
        self, codec: StateCodec, principal: Callable[[RequestScope], str | None] | None = None
    ) -> InputRound | None:
        """The one place a round is made: its sealed state is opened (and refused, -32602) here,
        bound to the principal this request acts for: the server's ``principal`` hook's answer,
        else the identity its transport authenticated (a state sealed for one principal does
        not open for another)."""
        who = principal(self) if principal is not None else self.principal
        self.round = InputRound(self.request.method, self.request.params, codec, who)
        return self.round

    def _log_threshold(self) -> str | None:
        return self.client.log_level


def legacy_scope(request: IncomingRequest, session: ServerSession) -> RequestScope:
    """A handshake-era request: the client is who it said it was in ``initialize``."""
    return _HandshakeScope(request, session, session.client)


def modern_scope(
    request: IncomingRequest, session: ServerSession, envelope: Envelope, principal: str | None = None
) -> RequestScope:
    """A 2026-07-28 request: the client describes itself in this request's envelope."""
    return _StatelessScope(request, session, envelope, principal)


current_scope: contextvars.ContextVar[RequestScope | None] = contextvars.ContextVar("elicitkit_request", default=None)
"""The scope of the request being served in this task (set while a tool runs)."""
