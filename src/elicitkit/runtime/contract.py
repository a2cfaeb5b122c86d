"""The typed seam between transports and sessions.

A transport moves messages; a session understands them. They meet here, and only here:

- a transport gets a :class:`Send` from nothing but itself, and hands it to an
  :class:`Endpoint` (what a server is, seen from a transport) to open a :class:`SessionPort`;
- it feeds the port what arrives, closes it when the medium ends, cancels a request whose
  client went away (2026 over HTTP), and asks the negotiated protocol version where the
  framing depends on it (SSE priming events);
- a transport with per-request streams (HTTP) passes a :class:`StreamControl`, through which
  the session may end a live stream early, and learns the session id and the id a request
  had on the wire (stateless HTTP renumbers requests), and nothing else about HTTP;
- an HTTP transport asks its :class:`Endpoint` for the pages it serves beside the endpoint
  and the backplane a fleet shares.

Everything that crosses is named here: neither side looks the other up with ``getattr``.

Nothing here knows MCP methods or questions, so transports stay free of ``elicitkit.server``
and ``elicitkit.client``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from elicitkit.protocol.inbound import Inbound
from elicitkit.protocol.jsonrpc import DEFAULT_MAX_MESSAGE_BYTES, JSON, RequestId

if TYPE_CHECKING:
    from elicitkit.backplane.base import Backplane

# Raw bytes off a wire, or a value the transport already decoded.
Incoming: TypeAlias = "bytes | str | JSON"

# An ASGI application (scope, receive, send): what a server's pages are to an HTTP transport.
ASGIApp: TypeAlias = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]
]


class Send(Protocol):
    """Transport hook: deliver one wire dict; ``related`` is the request it belongs to, if any."""

    def __call__(self, message: JSON, related: RequestId | None, /) -> Awaitable[None]: ...


class StreamControl(Protocol):
    """What a transport with one stream per request (HTTP) lets its session do."""

    def close_stream(self, request_id: RequestId, retry_ms: int) -> bool:
        """End the request's live stream now; the client resumes later. False: nothing to close."""
        ...

    def request_unanswered(self, request_id: RequestId) -> None:
        """The request ended without a response (cancelled): its stream will get nothing more."""
        ...

    @property
    def session_id(self) -> str:
        """The ``Mcp-Session-Id`` the client names (2025 eras); empty for the shared stateless session."""
        ...

    def public_id(self, request_id: RequestId) -> RequestId | None:
        """The id the client gave request ``request_id`` where the transport renumbered it
        (stateless HTTP), else None: the session's id is the client's."""
        ...


class SessionPort(Protocol):
    """One session as its transport drives it. ``async with port:`` runs it for the block."""

    def feed(self, data: Incoming, inbound: Inbound | None = None, /) -> Awaitable[None]:
        """Everything the transport receives for this session, in order.

        ``inbound``: the route the transport found for this one request with
        :func:`~elicitkit.protocol.inbound.classify_request` (so the session does not decide again).
        """
        ...

    def close(self, reason: str = ..., /) -> None:
        """The medium ended: fail what waits, stop what runs."""
        ...

    def cancel(self, request_id: RequestId, /) -> None:
        """Cancel a request being served, as if the client had sent ``notifications/cancelled``."""
        ...

    @property
    def protocol_version(self) -> str | None:
        """The version the handshake settled (None before it, and on a stateless session)."""
        ...

    def __aenter__(self) -> Awaitable[object]: ...

    def __aexit__(self, *exc: object) -> Awaitable[bool | None]: ...


class Endpoint(Protocol):
    """A server as its transports see it: something that opens sessions."""

    @property
    def name(self) -> str:
        """For people: what an in-memory transport calls the server."""
        ...

    def create_session(
        self,
        send: Send,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        streams: StreamControl | None = None,
        stateless: bool = False,
    ) -> SessionPort:
        """A session whose outgoing messages go to ``send``.

        ``streams``: the transport's per-request stream control (HTTP). ``stateless``: the
        session serves only 2026-07-28 requests (the one shared session behind HTTP).
        """
        ...

    def tool_header_params(self, name: str) -> dict[str, str]:
        """``{argument: header}`` for tool ``name``'s ``x-mcp-header`` arguments (HTTP checks them)."""
        ...

    def serve_pages(
        self, prefix: str, base_url: str | None, allow_host: Callable[[str], bool] | None = None
    ) -> ASGIApp:
        """The server's own question pages as an ASGI app, mounted by HTTP at ``prefix``; links
        use ``base_url`` (None: only a configured public address), ``allow_host`` vets Hosts."""
        ...

    def http_backplane(self) -> Backplane | None:
        """What HTTP serving shares with a fleet (None: the transport's in-process default)."""
        ...
