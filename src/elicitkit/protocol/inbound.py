"""Which era a request belongs to, decided once, without I/O.

Every request a server receives goes through :func:`classify_request` exactly once: the HTTP
transport calls it with what the request carried (headers, whether a session id came), and
stdio or in-memory sessions call it themselves with no transport facts. The answer is

- :data:`HANDSHAKE`: a handshake-era request (2025-11-25 and before); the session's state applies;
- :class:`Stateless`: a 2026-07-28 request, with its envelope parsed once and checked in the
  spec's order (``_meta`` -32602, HTTP headers -32020, version -32022, removed method -32601);
- :class:`Rejected`: the JSON-RPC error to answer with, and the HTTP status that goes with it.

The checks every 2026 request passes are done here, so the session serving it starts from a
valid :class:`~elicitkit.protocol.modern.Envelope` and never looks at version strings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from elicitkit._frozen import frozen_builder
from elicitkit.protocol.errors import INVALID_REQUEST, MCPError, modern_http_status
from elicitkit.protocol.handshake import INITIALIZE
from elicitkit.protocol.jsonrpc import JSON, RequestId
from elicitkit.protocol.modern import (
    REMOVED_METHODS,
    Envelope,
    check_headers,
    check_method,
    check_version,
    has_envelope,
    read_envelope,
)
from elicitkit.protocol.versions import LEGACY_VERSIONS, MODERN_VERSIONS, SUPPORTED_VERSIONS

VERSION_HEADER = "mcp-protocol-version"
SESSION_HEADER = "mcp-session-id"

HeaderParams = Callable[[str], dict[str, str]]  # tool name -> {argument: header}


@dataclass(frozen=True, slots=True)
class Handshake:
    """A handshake-era message: served by a session that ran ``initialize``."""


@dataclass(frozen=True, slots=True)
class Stateless:
    """A 2026-07-28 message; ``envelope`` is None for a notification or response (nothing to serve).

    ``principal``: who the transport authenticated the request as (HTTP), if anyone; a round's
    sealed state is bound to it.
    """

    envelope: Envelope | None
    principal: str | None = None


@dataclass(frozen=True, slots=True)
class Rejected:
    """Refused before anything serves it: the error to answer with, and its HTTP status."""

    error: MCPError
    status: int = 400


Inbound = Handshake | Stateless | Rejected

# ``Stateless(envelope, principal)``, made quicker (every 2026 request is classified).
_stateless: Callable[[Envelope | None, str | None], Stateless] = frozen_builder(Stateless)

HANDSHAKE = Handshake()  # one instance: the common case allocates nothing
_NOTHING_TO_SERVE = Stateless(None)


def _no_header_params(_: str) -> dict[str, str]:
    return {}


def is_stateless(params: object, version_header: str | None, session_id: str | None) -> bool:
    """2026 if the body carries the envelope or the header names a 2026 version; an unknown
    version header counts as 2026 only without a session (a session is a handshake client's)."""
    if version_header in MODERN_VERSIONS or has_envelope(params):
        return True
    return session_id is None and version_header is not None and version_header not in LEGACY_VERSIONS


def classify_request(
    method: str,
    params: object,
    *,
    headers: Mapping[str, str] | None = None,
    header_params: HeaderParams = _no_header_params,
    stateless: bool = False,
    principal: str | None = None,
) -> Inbound:
    """The route of one request (see the module docstring).

    ``headers`` (lower-case names) are the HTTP request's; None off HTTP. ``header_params``
    finds a tool's ``x-mcp-header`` arguments. ``stateless``: the receiving session serves
    only 2026 requests. ``principal``: the identity the transport authenticated, if any.
    """
    if headers is not None:
        version_header = headers.get(VERSION_HEADER)
        session_id = headers.get(SESSION_HEADER)
        modern = stateless or is_stateless(params, version_header, session_id)
    else:
        version_header = session_id = None
        modern = stateless or has_envelope(params)
    if not modern:
        if headers is None:
            return HANDSHAKE
        if version_header is not None and version_header not in SUPPORTED_VERSIONS:
            return Rejected(MCPError(INVALID_REQUEST, f"unsupported MCP-Protocol-Version {version_header!r}"))
        if session_id is None and method != INITIALIZE:
            return Rejected(MCPError(INVALID_REQUEST, "missing Mcp-Session-Id header; send initialize first"))
        return HANDSHAKE
    try:
        envelope = read_envelope(params)
        if headers is not None:
            assert isinstance(params, dict)  # read_envelope found _meta in it
            name = params.get("name")
            wanted = header_params(name) if method == "tools/call" and isinstance(name, str) else {}
            check_headers(headers, method, params, envelope.protocol_version, wanted)
        # (the checks' own calls only when they fail: every 2026 request passes here)
        if envelope.protocol_version not in MODERN_VERSIONS:
            check_version(envelope.protocol_version)
        if method in REMOVED_METHODS:
            check_method(method)
    except MCPError as exc:
        return Rejected(exc, modern_http_status(exc.code))
    return _stateless(envelope, principal)


def classify_other(params: object, headers: Mapping[str, str]) -> Inbound:
    """A notification or response over HTTP: 2026 ones are accepted and dropped (no session),
    handshake ones need the session they belong to."""
    version_header = headers.get(VERSION_HEADER)
    session_id = headers.get(SESSION_HEADER)
    if is_stateless(params, version_header, session_id):
        return _NOTHING_TO_SERVE
    if version_header is not None and version_header not in SUPPORTED_VERSIONS:
        return Rejected(MCPError(INVALID_REQUEST, f"unsupported MCP-Protocol-Version {version_header!r}"))
    if session_id is None:
        return Rejected(MCPError(INVALID_REQUEST, "missing Mcp-Session-Id header; send initialize first"))
    return HANDSHAKE


def refuses_streams(headers: Mapping[str, str]) -> bool:
    """A GET or DELETE from a 2026 client: that era has no standalone stream and no sessions."""
    return SESSION_HEADER not in headers and headers.get(VERSION_HEADER) in MODERN_VERSIONS


def to_client(message: JSON, public_id: RequestId) -> tuple[JSON, int]:
    """A 2026 answer back under the client's own id, and the HTTP status it goes out with.

    The shared stateless session serves every client's requests under ids of its own (two
    clients may both send id 1); the transport maps each answer back here.
    """
    answer = {**message, "id": public_id}
    error = answer.get("error")
    return answer, modern_http_status(error.get("code")) if isinstance(error, dict) else 200
