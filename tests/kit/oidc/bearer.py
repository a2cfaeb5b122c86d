"""A test-only resource server gate: bearer JWTs from oidc-provider, checked against its JWKS.

:class:`BearerGate` wraps any ASGI app (an elicitkit server's, in these tests). It serves the
protected resource metadata (RFC 9728) at the path-based and the root well-known address,
pointing at the authorization server, and lets a request through only with an
``Authorization: Bearer`` JWT access token (RFC 9068) signed by that server, for this resource
(``aud``), unexpired, with the required scopes. Anything else gets a 401 whose
``WWW-Authenticate`` names the metadata (and the scopes), as the MCP authorization spec asks.
It counts what it saw, so tests can say "this call used a token" or "this one was refused".
The real resource server is issue 22; this is the smallest honest one for the client tests.
"""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from starlette.types import ASGIApp, Receive, Scope, Send

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def _fetch_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:  # loopback only, in tests
        return json.loads(response.read())


class BearerGate:
    """``app`` behind bearer JWTs for ``resource`` from ``issuer`` (RFC 9728 metadata, RFC 9068 tokens)."""

    def __init__(self, app: ASGIApp, *, resource: str, issuer: str, scopes: Sequence[str] = ("mcp:tools",)) -> None:
        self.app = app
        self.resource = resource
        self.issuer = issuer
        self.scopes = list(scopes)
        path = urlsplit(resource).path.rstrip("/")
        self.metadata_paths = {WELL_KNOWN + path, WELL_KNOWN}
        origin = resource[: len(resource) - len(urlsplit(resource).path)] if path else resource.rstrip("/")
        self.metadata_url = origin + WELL_KNOWN + path
        self.seen: Counter[str] = Counter()  # "ok", "missing", "invalid", "metadata"
        self.subjects: list[str] = []
        self._keys: KeySet | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": self.scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "elicitkit test server",
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan: the app's own
            return
        if scope["path"] in self.metadata_paths and scope["method"] == "GET":
            self.seen["metadata"] += 1
            await self._send(send, 200, json.dumps(self.metadata).encode(), [(b"content-type", b"application/json")])
            return
        token = self._bearer(scope)
        if token is None:
            self.seen["missing"] += 1
            await self._refuse(send, None)
            return
        claims = await self._verify(token)
        if claims is None:
            self.seen["invalid"] += 1
            await self._refuse(send, "invalid_token")
            return
        self.seen["ok"] += 1
        self.subjects.append(str(claims.get("sub")))
        await self.app(scope, receive, send)

    @staticmethod
    def _bearer(scope: Scope) -> str | None:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer" and token.strip():
                    return token.strip()
        return None

    async def _jwks(self, refresh: bool = False) -> KeySet:
        if self._keys is None or refresh:
            config = await anyio.to_thread.run_sync(_fetch_json, self.issuer + "/.well-known/openid-configuration")
            self._keys = KeySet.import_key_set(await anyio.to_thread.run_sync(_fetch_json, config["jwks_uri"]))
        return self._keys

    async def _verify(self, token: str) -> dict[str, Any] | None:
        """The token's claims when it is a good access token for this resource, else None."""
        for refresh in (False, True):  # an unknown key: the provider may have new ones
            try:
                decoded = jwt.decode(token, await self._jwks(refresh), algorithms=["RS256", "PS256", "ES256"])
            except JoseError:
                continue
            if decoded.header.get("typ", "").lower() not in ("at+jwt", "application/at+jwt"):
                return None
            registry = jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": self.resource},
                exp={"essential": True},
            )
            try:
                registry.validate(decoded.claims)
            except JoseError:
                return None
            granted = str(decoded.claims.get("scope", "")).split()
            if not all(s in granted for s in self.scopes):
                return None
            return dict(decoded.claims)
        return None

    async def _refuse(self, send: Send, error: str | None) -> None:
        parts = [f'resource_metadata="{self.metadata_url}"', f'scope="{" ".join(self.scopes)}"']
        if error:
            parts.insert(0, f'error="{error}"')
        challenge = "Bearer " + ", ".join(parts)
        body = json.dumps({"error": error or "unauthorized"}).encode()
        headers = [(b"www-authenticate", challenge.encode()), (b"content-type", b"application/json")]
        await self._send(send, 401, body, headers)

    @staticmethod
    async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        headers = [*headers, (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
