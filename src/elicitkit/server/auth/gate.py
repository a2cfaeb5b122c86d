"""The bearer gate in front of the HTTP endpoint, and the protected resource metadata (RFC 9728).

:class:`ResourceServer` is configuration; :meth:`ResourceServer.wrap` makes the ASGI layer the
HTTP transport puts in front of its endpoint (through ``Endpoint.http_gate``: the transport
never imports this). Every request to the endpoint (POST, GET streams, DELETE, and so
``subscriptions/listen``) needs ``Authorization: Bearer``; without one, or with one the verifier
refuses, the answer is 401 with ``WWW-Authenticate: Bearer resource_metadata=..., scope=...``;
a token without a scope the server or the called tool, prompt or resource needs gets 403
``insufficient_scope`` naming it. A good token becomes ``scope["user"]``, whose identity is the
principal everything else binds to. The question pages under ``<path>/ask/`` are opened by a
browser, which holds no bearer token: they are let through and guard themselves with their
single-use links bound to the principal that asked.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson

from elicitkit.runtime.contract import ASGIApp
from elicitkit.server.auth.tokens import AccessToken, InvalidToken, TokenVerifier

__all__ = ["WELL_KNOWN", "AuthenticatedUser", "ResourceServer"]

WELL_KNOWN = "/.well-known/oauth-protected-resource"
logger = logging.getLogger("elicitkit.auth")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
App = ASGIApp

_MAX_SNIFF = 4 * 1024 * 1024  # the endpoint's own message cap; beyond it the endpoint answers 413
# Where a request names what it calls: method -> the params key holding the name.
_NAMED = {"tools/call": ("name", "tool"), "prompts/get": ("name", "prompt"), "resources/read": ("uri", "resource")}


class AuthenticatedUser:
    """What the gate puts in ``scope["user"]`` (Starlette's convention): the verified token."""

    __slots__ = ("token",)
    is_authenticated = True

    def __init__(self, token: AccessToken) -> None:
        self.token = token

    @property
    def identity(self) -> str:
        return self.token.principal

    @property
    def display_name(self) -> str:
        return self.token.subject


class ResourceServer:
    """This server as an OAuth protected resource.

    ``verifier``: :class:`~.jwt.JWTVerifier`, :class:`~.introspection.IntrospectionVerifier` or
    your own :class:`~.tokens.TokenVerifier`. ``resource``: the endpoint's public URL, with any
    mount prefix (tokens must name it as their audience, RFC 8707). ``authorization_servers``:
    issuers clients get tokens from. ``scopes``: needed for every request. ``tool_scopes`` /
    ``prompt_scopes`` / ``resource_scopes``: more for one tool, prompt or resource URI.
    """

    def __init__(
        self,
        verifier: TokenVerifier,
        *,
        resource: str,
        authorization_servers: Sequence[str],
        scopes: Sequence[str] = (),
        tool_scopes: Mapping[str, Sequence[str]] | None = None,
        prompt_scopes: Mapping[str, Sequence[str]] | None = None,
        resource_scopes: Mapping[str, Sequence[str]] | None = None,
        resource_name: str | None = None,
        documentation: str | None = None,
    ) -> None:
        parts = urlsplit(resource)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment or parts.query:
            raise ValueError(f"resource must be an absolute http(s) URL without query or fragment: {resource!r}")
        if not authorization_servers:
            raise ValueError("name at least one authorization server (the issuer clients get tokens from)")
        self.verifier = verifier
        self.resource = resource
        self.authorization_servers = list(authorization_servers)
        self.scopes = list(scopes)
        self.item_scopes: dict[str, dict[str, list[str]]] = {
            "tool": {k: list(v) for k, v in (tool_scopes or {}).items()},
            "prompt": {k: list(v) for k, v in (prompt_scopes or {}).items()},
            "resource": {k: list(v) for k, v in (resource_scopes or {}).items()},
        }
        self.resource_name = resource_name
        self.documentation = documentation
        path = parts.path.rstrip("/")
        self.metadata_path = WELL_KNOWN + path
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{self.metadata_path}"

    @property
    def metadata(self) -> dict[str, Any]:
        """The protected resource metadata document (RFC 9728 section 2)."""
        every = sorted({*self.scopes, *(s for kind in self.item_scopes.values() for v in kind.values() for s in v)})
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        }
        if every:
            doc["scopes_supported"] = every
        if self.resource_name:
            doc["resource_name"] = self.resource_name
        if self.documentation:
            doc["resource_documentation"] = self.documentation
        return doc

    async def metadata_app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The metadata document as an ASGI app: mount it at ``/.well-known/oauth-protected-resource<path>``
        of the host app when the endpoint sits under a prefix the gate never sees requests for."""
        if scope["type"] != "http":
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _reply(send, 405, b'{"error":"method not allowed"}', [(b"allow", b"GET, HEAD")])
            return
        await _reply(send, 200, orjson.dumps(self.metadata), [(b"access-control-allow-origin", b"*")])

    def wrap(self, app: App, open_prefix: str | None = None) -> App:
        """``app`` behind the gate; paths under ``open_prefix`` (the question pages) go straight through."""
        return _Gate(self, app, open_prefix)

    def required_for(self, body: bytes) -> list[str]:
        """The scopes a POST body's request needs beyond :attr:`scopes` (what it calls)."""
        if not any(self.item_scopes.values()):
            return []
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return []  # the endpoint answers it with a parse error
        needed: list[str] = []
        for one in message if isinstance(message, list) else [message]:
            if not isinstance(one, dict):
                continue
            named = _NAMED.get(one.get("method"))  # type: ignore[arg-type]
            params = one.get("params")
            if named is None or not isinstance(params, dict):
                continue
            name = params.get(named[0])
            if isinstance(name, str):
                needed += self.item_scopes[named[1]].get(name, [])
        return needed

    def challenge(self, error: str | None, description: str | None, scopes: Sequence[str]) -> bytes:
        parts = []
        if error:
            parts.append(f'error="{error}"')
        if description:
            parts.append('error_description="' + description.replace("\\", "").replace('"', "'") + '"')
        parts.append(f'resource_metadata="{self.metadata_url}"')
        if scopes:
            parts.append('scope="' + " ".join(scopes) + '"')
        return ("Bearer " + ", ".join(parts)).encode()


class _Gate:
    __slots__ = ("app", "open_prefix", "rs")

    def __init__(self, rs: ResourceServer, app: App, open_prefix: str | None) -> None:
        self.rs = rs
        self.app = app
        self.open_prefix = open_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        root = scope.get("root_path", "")
        inner = path[len(root) :] if root and path.startswith(root) else path  # the path below a mount
        if WELL_KNOWN in (path, inner) or self.rs.metadata_path in (path, inner):
            await self.rs.metadata_app(scope, receive, send)
            return
        if self.open_prefix is not None and inner.startswith(self.open_prefix):
            await self.app(scope, receive, send)
            return
        token = _bearer(scope["headers"])
        if token is None:
            await self._refuse(send, 401, None, "this server needs an OAuth bearer token", self.rs.scopes)
            return
        try:
            verified = await self.rs.verifier.verify(token)
        except InvalidToken as exc:
            logger.info("refused a bearer token: %s", exc)
            await self._refuse(send, 401, "invalid_token", str(exc), self.rs.scopes)
            return
        missing = [s for s in self.rs.scopes if s not in verified.scopes]
        if scope["method"] == "POST" and any(self.rs.item_scopes.values()):
            body, receive = await _buffer(receive)
            missing += [s for s in self.rs.required_for(body) if s not in verified.scopes and s not in missing]
        if missing:
            needed = sorted({*verified.scopes, *self.rs.scopes, *missing})
            text = "the token lacks the scope " + ", ".join(missing)
            logger.info("refused %s: %s", verified.principal, text)
            await self._refuse(send, 403, "insufficient_scope", text, needed)
            return
        scope["user"] = AuthenticatedUser(verified)
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send, status: int, error: str | None, text: str, scopes: Sequence[str]) -> None:
        body = orjson.dumps({"error": error or "invalid_request", "error_description": text})
        await _reply(send, status, body, [(b"www-authenticate", self.rs.challenge(error, text, scopes))])


def _bearer(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token:
                return token
            return None
    return None


async def _buffer(receive: Receive) -> tuple[bytes, Receive]:
    """The request body (up to the endpoint's cap), and a ``receive`` that gives it again."""
    chunks: list[bytes] = []
    size = 0
    more = False
    pending: list[dict[str, Any]] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client left: the endpoint sees that too
            pending.append(message)
            break
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        more = bool(message.get("more_body", False))
        if not more or size > _MAX_SNIFF:
            break
    body = b"".join(chunks)
    queued: list[dict[str, Any]] = [{"type": "http.request", "body": body, "more_body": more}, *pending]

    async def replay() -> Any:
        if queued:
            return queued.pop(0)
        return await receive()

    return body, replay


async def _reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    all_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})
