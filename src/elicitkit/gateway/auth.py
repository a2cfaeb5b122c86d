"""OAuth at the gateway: its front door as a resource server, and each HTTP backend's own client.

The front door (``[gateway.auth]``) is the server's :class:`~elicitkit.server.auth.ResourceServer`
as it is: bearer tokens for the gateway's own resource URL, its protected resource metadata, 401
with ``WWW-Authenticate``; the verified principal is what the gateway binds its parked calls,
pages and backend connections to. A backend's ``auth`` table picks one of the client's auth
objects (:mod:`elicitkit.auth`), built once per backend so each keeps its own tokens, for its own
audience. Secrets are never in the file: the file names the environment variables holding them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from elicitkit.gateway.errors import SignInNeeded

if TYPE_CHECKING:
    from elicitkit.auth.base import AuthProvider
    from elicitkit.server.auth.connections import Connections, Provider
    from elicitkit.server.auth.gate import ResourceServer
    from elicitkit.server.scope import RequestScope
    from elicitkit.server.server import Server

__all__ = [
    "BackendAuth",
    "FrontDoor",
    "PersonToken",
    "SignInNeeded",
    "backend_auth",
    "front_door",
    "provider_for",
    "sign_in",
]

logger = logging.getLogger("elicitkit.gateway")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _secret(env: str) -> str:
    value = os.environ.get(env)
    if not value:
        raise ValueError(f"${env} is not set (the file names the variable; the secret stays out of it)")
    return value


def _absolute(value: str | None) -> str | None:
    if value is None:
        return value
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
        raise ValueError("must be an absolute http:// or https:// URL")
    return value


class FrontDoor(_Strict):
    """``[gateway.auth]``: hosts need a bearer token for ``resource`` (the gateway's public MCP URL)."""

    issuer: str
    """The authorization server hosts get tokens from (named in the metadata)."""
    resource: str
    """The gateway's endpoint as hosts reach it (``https://gw.example.com/mcp``): tokens must name it (``aud``)."""
    scopes: tuple[str, ...] = ()
    """Needed for every request."""
    jwks_uri: str | None = None
    """JWT keys (default: the issuer's metadata)."""
    introspection: str | None = None
    """An RFC 7662 endpoint for opaque tokens instead of JWTs (with ``client_id`` and ``client_secret_env``)."""
    client_id: str | None = None
    client_secret_env: str | None = None
    resource_name: str | None = None

    @field_validator("issuer", "resource", "jwks_uri", "introspection")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return _absolute(value)

    @model_validator(mode="after")
    def _introspection(self) -> FrontDoor:
        if urlsplit(self.resource).query:
            raise ValueError("resource: a URL without a query")
        if self.introspection is not None:
            if not self.client_id or not self.client_secret_env:
                raise ValueError("introspection needs client_id and client_secret_env (the gateway's client there)")
            _secret(self.client_secret_env)
        elif self.client_id or self.client_secret_env:
            raise ValueError("client_id and client_secret_env are for introspection; JWTs need neither")
        return self


def front_door(config: FrontDoor) -> ResourceServer:
    """The gateway's :class:`~elicitkit.server.auth.ResourceServer`, as any elicitkit server's."""
    from elicitkit.server.auth import IntrospectionVerifier, JWTVerifier, ResourceServer, TokenVerifier

    verifier: TokenVerifier
    if config.introspection is not None:
        assert config.client_id is not None and config.client_secret_env is not None
        verifier = IntrospectionVerifier(
            config.introspection,
            client_id=config.client_id,
            client_secret=_secret(config.client_secret_env),
            audience=config.resource,
            issuer=config.issuer,
        )
    else:
        verifier = JWTVerifier(config.issuer, config.resource, jwks_uri=config.jwks_uri)
    return ResourceServer(
        verifier,
        resource=config.resource,
        authorization_servers=[config.issuer],
        scopes=config.scopes,
        resource_name=config.resource_name,
    )


class BackendAuth(_Strict):
    """``[backends.auth]``: how the gateway gets its own tokens for one HTTP backend.

    ``client_credentials``: the gateway as a machine client (``client_id`` and
    ``client_secret_env``, or ``private_key_file`` for ``private_key_jwt``). ``oauth``: tokens a
    person signed in for ahead of time (``elicitkit auth login URL``), kept in ``token_store``
    (a file; default: the store that command uses) and refreshed; a sign-in it cannot do
    alone is an error saying how. ``token``: a bearer token from ``token_env``. ``connect``:
    each person signs in with their own account at the backend's authorization server
    (``issuer``, where the gateway is registered as ``client_id`` with the redirect
    ``<gateway>/ask/connect/callback``), asked through a URL question: ``ctx.authorize``'s path.
    """

    type: Literal["client_credentials", "oauth", "token", "connect"]
    issuer: str | None = None
    client_id: str | None = None
    client_secret_env: str | None = None
    private_key_file: str | None = None
    key_id: str | None = None
    scopes: tuple[str, ...] | None = None
    token_store: str | None = None
    token_env: str | None = None

    @field_validator("issuer")
    @classmethod
    def _issuer(cls, value: str | None) -> str | None:
        return _absolute(value)

    @model_validator(mode="after")
    def _fits(self) -> BackendAuth:
        given = {k for k in type(self).model_fields if k != "type" and getattr(self, k) is not None}
        allowed = {
            "client_credentials": {
                "client_id",
                "client_secret_env",
                "private_key_file",
                "key_id",
                "scopes",
                "token_store",
            },
            "oauth": {"client_id", "client_secret_env", "scopes", "token_store"},
            "token": {"token_env"},
            "connect": {"issuer", "client_id", "client_secret_env", "scopes"},
        }[self.type]
        extra = sorted(given - allowed)
        if extra:
            raise ValueError(f"{', '.join(extra)}: not used with type = {self.type!r}")
        if self.type == "client_credentials":
            if not self.client_id:
                raise ValueError("client_credentials needs client_id")
            if (self.client_secret_env is None) == (self.private_key_file is None):
                raise ValueError("client_credentials needs exactly one of client_secret_env and private_key_file")
            if self.client_secret_env is not None:
                _secret(self.client_secret_env)
            if self.private_key_file is not None and not Path(self.private_key_file).is_file():
                raise ValueError(f"private_key_file: no file at {self.private_key_file}")
        elif self.type == "token":
            if self.token_env is None:
                raise ValueError("type = 'token' needs token_env (the variable holding the bearer token)")
            _secret(self.token_env)
        elif self.type == "connect" and (not self.issuer or not self.client_id):
            raise ValueError(
                "type = 'connect' needs issuer (the backend's authorization server) and client_id (the gateway's"
                " client there, with the redirect <gateway>/ask/connect/callback)"
            )
        elif self.client_secret_env is not None:
            if self.client_id is None:
                raise ValueError("client_secret_env needs client_id (a client registered by hand)")
            _secret(self.client_secret_env)
        return self


class _NoPerson:
    """The authorizer of an ``oauth`` backend: the gateway has no person of its own to sign in."""

    redirect_uri = "http://127.0.0.1/"

    def __init__(self, backend: str, url: str) -> None:
        self.backend = backend
        self.url = url

    async def start(self) -> None:
        raise SignInNeeded(
            f"backend {self.backend!r} needs a sign-in: run `elicitkit auth login {self.url}` where the gateway"
            " runs (same token store), then call again"
        )

    async def authorize(self, authorization_url: str) -> dict[str, str]:  # pragma: no cover - start refuses
        raise SignInNeeded(f"backend {self.backend!r} needs a sign-in")

    async def close(self) -> None:
        return None


def backend_auth(config: BackendAuth, backend: str, url: str) -> AuthProvider | None:
    """The client auth object for one backend (one per backend: its tokens are its own); None for
    ``connect``, whose tokens are each person's (:class:`PersonToken`, per connection)."""
    from elicitkit.auth import ClientCredentials, FileTokenStore, OAuth, StaticToken, default_token_store

    if config.type == "connect":
        return None

    store = FileTokenStore(config.token_store) if config.token_store is not None else None
    secret = _secret(config.client_secret_env) if config.client_secret_env is not None else None
    scopes = list(config.scopes) if config.scopes is not None else None
    if config.type == "token":
        assert config.token_env is not None
        return StaticToken(_secret(config.token_env))
    if config.type == "client_credentials":
        assert config.client_id is not None
        key = Path(config.private_key_file).read_text(encoding="utf-8") if config.private_key_file else None
        return ClientCredentials(
            client_id=config.client_id,
            client_secret=secret,
            private_key=key,
            key_id=config.key_id,
            scopes=scopes,
            store=store,
        )
    return OAuth(
        scopes=scopes,
        client_id=config.client_id,
        client_secret=secret,
        store=store if store is not None else default_token_store(),
        authorizer=_NoPerson(backend, url),
    )


# -- each person's own account at a backend (type = "connect") ------------------------------------


def provider_for(config: BackendAuth, backend: str, url: str) -> Provider:
    """The backend's authorization server as a ``ctx.authorize`` provider named after the backend;
    its tokens are asked for the backend's URL (RFC 8707), so they are good there only."""
    from elicitkit.server.auth.connections import Provider

    assert config.issuer is not None and config.client_id is not None
    secret = _secret(config.client_secret_env) if config.client_secret_env is not None else None
    return Provider(
        backend,
        client_id=config.client_id,
        client_secret=secret,
        issuer=config.issuer,
        scopes=tuple(config.scopes or ()),
        title=backend,
        params={"resource": url},
    )


class PersonToken:
    """A connection's auth for one principal at a ``connect`` backend: their token, refreshed by
    :class:`~elicitkit.server.auth.connections.Connections`; a token the backend refuses is
    forgotten, so the person's next call asks them to sign in again."""

    def __init__(self, connections: Connections, principal: str | None, backend: str) -> None:
        self.connections = connections
        self.principal = principal
        self.backend = backend

    def __repr__(self) -> str:
        return f"PersonToken(backend={self.backend!r}, principal={self.principal!r})"

    async def headers(self, method: str, url: str) -> Mapping[str, str]:
        if self.principal is None:
            return {}
        tokens = await self.connections.token(self.principal, self.backend)
        return {"Authorization": f"Bearer {tokens.access_token}"} if tokens is not None else {}

    async def on_challenge(self, status: int, headers: Mapping[str, str], url: str, sent: Mapping[str, str]) -> bool:
        if status == 401 and self.principal is not None and sent.get("Authorization"):
            logger.info(
                "backend %s refused %s's token; it is forgotten (they sign in again)", self.backend, self.principal
            )
            await self.connections.revoke(self.principal, self.backend)
        return False


async def sign_in(scope: RequestScope, server: Server, backend: str) -> None:
    """Make sure the request's principal has a token at ``backend``: ``ctx.authorize`` itself
    (a URL question in the host's era, the page for a host that cannot open URLs)."""
    from elicitkit.server.auth.connections.asking import authorize
    from elicitkit.server.context import Context

    await authorize(Context(scope, server), backend, message=f"Sign in to {backend} to continue.")
