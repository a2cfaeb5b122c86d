"""Finding who authorizes a server: protected-resource metadata (RFC 9728), then the authorization
server's metadata (RFC 8414, then OpenID discovery), with every check the MCP spec asks for.

The order is the spec's: a 401's ``resource_metadata`` URL, else the path-based well-known URL,
else the root one. The authorization server's document is looked up with RFC 8414 path
insertion, then OpenID discovery (path insertion, then path appending); its ``issuer`` must be
exactly the URL it was looked up for (simple string comparison, no normalization). A server
with no metadata at all is a 2025-03-26 server: its origin is the authorization server, and
without that one's metadata the default endpoints (``/authorize``, ``/token``, ``/register``)
are used. The parsers are pure (fuzzed in tests/fuzz/test_auth_parsers_fuzz.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from elicitkit.auth.errors import IssuerMismatch, MetadataError, ResourceMismatch
from elicitkit.auth.http import Fetcher, Reply, check_url

__all__ = [
    "AuthServer",
    "ProtectedResource",
    "as_metadata_urls",
    "check_resource",
    "discover_auth_server",
    "discover_resource",
    "fallback_auth_server",
    "origin",
    "parse_as_metadata",
    "parse_prm",
    "prm_urls",
]

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


@dataclass(frozen=True)
class ProtectedResource:
    """What the MCP server says about itself: its resource identifier and its authorization servers."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None = None
    metadata_url: str | None = None  # None: no metadata found (a 2025-03-26 server)


@dataclass(frozen=True)
class AuthServer:
    """The authorization server's metadata, checked: endpoints and the capabilities the flow reads."""

    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    token_endpoint_auth_methods: tuple[str, ...] | None = None
    code_challenge_methods: tuple[str, ...] | None = None
    grant_types: tuple[str, ...] | None = None
    iss_parameter_supported: bool = False
    client_id_metadata_document_supported: bool = False
    dpop_signing_algs: tuple[str, ...] | None = None
    from_metadata: bool = True  # False: the 2025-03-26 default endpoints, no document found
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, as written (no trailing slash)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def prm_urls(server_url: str) -> list[str]:
    """The well-known protected-resource metadata URLs to try, path-based first (RFC 9728 section 3.1)."""
    parts = urlsplit(server_url)
    base = origin(server_url)
    path = parts.path.rstrip("/")
    urls = [f"{base}{PRM_WELL_KNOWN}{path}"] if path else []
    urls.append(f"{base}{PRM_WELL_KNOWN}")
    return urls


def as_metadata_urls(issuer: str) -> list[str]:
    """Authorization-server metadata URLs in the MCP spec's order for ``issuer``."""
    base = origin(issuer)
    path = urlsplit(issuer).path.rstrip("/")
    if not path:
        return [f"{base}{OAUTH_WELL_KNOWN}", f"{base}{OIDC_WELL_KNOWN}"]
    return [f"{base}{OAUTH_WELL_KNOWN}{path}", f"{base}{OIDC_WELL_KNOWN}{path}", f"{base}{path}{OIDC_WELL_KNOWN}"]


def _strings(value: Any, what: str, error: type[MetadataError]) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise error(f"{what} must be a list of strings")
    return tuple(value)


def parse_prm(doc: dict[str, Any], url: str) -> ProtectedResource:
    """Check a protected-resource metadata document (RFC 9728 section 2)."""
    where = f"the protected resource metadata at {url}"
    resource = doc.get("resource")
    if not isinstance(resource, str) or not resource:
        raise MetadataError(f"{where} has no 'resource'; the server's metadata is broken, tell its operator")
    servers = _strings(doc.get("authorization_servers"), f"'authorization_servers' in {where}", MetadataError)
    if not servers:
        raise MetadataError(f"{where} names no authorization server ('authorization_servers'); cannot sign in")
    for server in servers:
        check_url(server, f"an authorization server in {where}", MetadataError)
    scopes = _strings(doc.get("scopes_supported"), f"'scopes_supported' in {where}", MetadataError)
    return ProtectedResource(resource, servers, scopes, url)


def _canonical(url: str) -> tuple[str, str, int | None, list[str]]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is None:
        port = {"https": 443, "http": 80}.get(scheme)
    segments = [s for s in parts.path.split("/") if s]
    return scheme, (parts.hostname or "").lower(), port, segments


def check_resource(resource: str, server_url: str) -> None:
    """The metadata's resource must be the server or a parent of its URL (same origin, path prefix).

    Otherwise the metadata describes another resource (RFC 9728 section 3.3, section 7.3): a token
    for it must not be requested, so this raises :class:`ResourceMismatch` before any authorization.
    """
    r_scheme, r_host, r_port, r_path = _canonical(resource)
    s_scheme, s_host, s_port, s_path = _canonical(server_url)
    if (r_scheme, r_host, r_port) != (s_scheme, s_host, s_port) or s_path[: len(r_path)] != r_path:
        raise ResourceMismatch(
            f"the server at {server_url} publishes metadata for another resource ({resource[:200]!r}); "
            "refusing to request a token for it. The server is misconfigured or not the one you meant."
        )


def parse_as_metadata(doc: dict[str, Any], expected_issuer: str | None, url: str) -> AuthServer:
    """Check authorization-server metadata: exact issuer (RFC 8414 section 3.3), endpoints, lists.

    ``expected_issuer`` None: a 2025-03-26 server without resource metadata, whose metadata was
    found at its origin rather than looked up for a named issuer; its ``issuer`` is taken as given.
    """
    where = f"the authorization server metadata at {url}"
    issuer = doc.get("issuer")
    if not isinstance(issuer, str) or not issuer:
        raise IssuerMismatch(f"{where} has no 'issuer'; refusing it (RFC 8414 requires the issuer)")
    if expected_issuer is not None and issuer != expected_issuer:
        raise IssuerMismatch(
            f"{where} says its issuer is {issuer[:200]!r}, but it was looked up for {expected_issuer!r}; "
            "refusing it (RFC 8414 section 3.3): the authorization server is misconfigured or impersonated"
        )
    token_endpoint = check_url(doc.get("token_endpoint"), f"'token_endpoint' in {where}", MetadataError)
    authorization_endpoint = doc.get("authorization_endpoint")
    if authorization_endpoint is not None:
        check_url(authorization_endpoint, f"'authorization_endpoint' in {where}", MetadataError)
    registration_endpoint = doc.get("registration_endpoint")
    if registration_endpoint is not None:
        check_url(registration_endpoint, f"'registration_endpoint' in {where}", MetadataError)

    def strings(name: str) -> tuple[str, ...] | None:
        return _strings(doc.get(name), f"'{name}' in {where}", MetadataError)

    return AuthServer(
        issuer=issuer,
        token_endpoint=token_endpoint,
        authorization_endpoint=authorization_endpoint,
        registration_endpoint=registration_endpoint,
        scopes_supported=strings("scopes_supported"),
        token_endpoint_auth_methods=strings("token_endpoint_auth_methods_supported"),
        code_challenge_methods=strings("code_challenge_methods_supported"),
        grant_types=strings("grant_types_supported"),
        iss_parameter_supported=doc.get("authorization_response_iss_parameter_supported") is True,
        client_id_metadata_document_supported=doc.get("client_id_metadata_document_supported") is True,
        dpop_signing_algs=strings("dpop_signing_alg_values_supported"),
        raw=doc,
    )


def fallback_auth_server(issuer: str) -> AuthServer:
    """A 2025-03-26 server without metadata: the default endpoints at the authorization base URL."""
    base = origin(issuer)
    return AuthServer(
        issuer=issuer,
        authorization_endpoint=f"{base}/authorize",
        token_endpoint=f"{base}/token",
        registration_endpoint=f"{base}/register",
        code_challenge_methods=("S256",),
        from_metadata=False,
    )


async def _first_found(http: Fetcher, urls: Sequence[str], what: str) -> Reply | None:
    """The first URL answering 2xx; 4xx/5xx move on to the next (they mean "not here")."""
    for url in urls:
        reply = await http.get(url, what, MetadataError)
        if reply.ok:
            return reply
    return None


async def discover_resource(http: Fetcher, server_url: str, metadata_url: str | None) -> ProtectedResource:
    """The server's protected-resource metadata: the challenge's URL, else the well-known ones.

    No metadata anywhere means a 2025-03-26 server: the resource is the server URL and its
    origin is the authorization server.
    """
    what = "protected resource metadata"
    urls = (
        [check_url(metadata_url, "the resource_metadata URL in the 401", MetadataError)] if metadata_url else []
    ) + [u for u in prm_urls(server_url) if u != metadata_url]
    reply = await _first_found(http, urls, what)
    if reply is None:
        return ProtectedResource(server_url, (origin(server_url),), None, None)
    prm = parse_prm(reply.json_object(what, MetadataError), reply.url)
    check_resource(prm.resource, server_url)
    return prm


async def discover_auth_server(http: Fetcher, issuer: str, *, allow_fallback: bool) -> AuthServer:
    """The authorization server's checked metadata.

    ``allow_fallback`` is the 2025-03-26 mode (the server has no resource metadata): the issuer
    is not checked against the origin it was found at, and the default endpoints stand in when
    there is no document at all.
    """
    what = "authorization server metadata"
    reply = await _first_found(http, as_metadata_urls(issuer), what)
    if reply is None:
        if allow_fallback:
            return fallback_auth_server(issuer)
        raise MetadataError(
            f"the authorization server {issuer} publishes no metadata "
            f"(tried {', '.join(as_metadata_urls(issuer))}); cannot sign in"
        )
    expected = None if allow_fallback else issuer
    return parse_as_metadata(reply.json_object(what, MetadataError), expected, reply.url)
