"""Auth objects for machines, no person involved: they obtain (and re-obtain) tokens on their own.

* :class:`ClientCredentials`: the client_credentials grant, authenticated with a secret
  (``client_secret_basic`` or ``_post``) or a private key (``private_key_jwt``, RFC 7523).
* :class:`EnterpriseManaged`: enterprise-managed authorization: the person's ID token from the
  enterprise IdP is exchanged there for an identity assertion grant (ID-JAG, RFC 8693 token
  exchange), which the MCP server's authorization server trades for an access token (RFC 7523
  jwt-bearer).
* :class:`WorkloadIdentity`: a workload's own JWT (from its platform: Kubernetes, a cloud,
  CI) presented with the jwt-bearer grant (RFC 7523). An error is reported, never retried
  with the same assertion or another grant.

Each follows the same discovery as :class:`~elicitkit.auth.OAuth` (resource metadata, exact
issuer, resource check) and sends ``resource`` (RFC 8707) with every token request.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

from elicitkit.auth.base import TokenStore
from elicitkit.auth.errors import TokenEndpointError
from elicitkit.auth.http import Fetcher, check_url
from elicitkit.auth.jose import load_signing_key
from elicitkit.auth.provider import Target, TokenAuth
from elicitkit.auth.tokens import ClientIdentity, request_token

__all__ = ["ClientCredentials", "EnterpriseManaged", "WorkloadIdentity"]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"

Assertion = str | Callable[[], str] | Callable[[], Awaitable[str]]


async def _resolve(value: Assertion) -> str:
    """A JWT given as a string, or read fresh from a (sync or async) function each time."""
    if isinstance(value, str):
        return value
    result = value()
    if inspect.isawaitable(result):
        result = await result
    if not isinstance(result, str) or not result:
        raise ValueError("the assertion function returned no JWT")
    return result


def _secret_method(target: Target) -> str:
    supported = target.auth_server.token_endpoint_auth_methods
    if supported is None or "client_secret_basic" in supported:
        return "client_secret_basic"
    return "client_secret_post"


class _Silent(TokenAuth):
    def _can_obtain_silently(self) -> bool:
        return True


class ClientCredentials(_Silent):
    """A machine client: the client_credentials grant with a secret or a private key.

    ``private_key`` is a PEM private key (EC, RSA or Ed25519) for ``private_key_jwt``;
    ``signing_alg`` defaults to the key's (ES256 for P-256, RS256 for RSA); ``key_id`` is the
    ``kid`` the authorization server knows the key by. Without a key, ``client_secret`` is sent
    with HTTP Basic (or in the body when the server supports only that).
    """

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str | None = None,
        private_key: str | bytes | None = None,
        key_id: str | None = None,
        signing_alg: str | None = None,
        scopes: Sequence[str] | None = None,
        store: TokenStore | None = None,
        timeout: float = 30.0,
        dpop: bool | None = None,
    ) -> None:
        super().__init__(scopes=scopes, store=store, timeout=timeout, dpop=dpop)
        if (client_secret is None) == (private_key is None):
            raise ValueError("ClientCredentials needs exactly one of client_secret and private_key")
        self.client_id = client_id
        self.client_secret = client_secret
        self.key_id = key_id
        self._key = load_signing_key(private_key, signing_alg) if private_key is not None else None

    def _client_identity(self) -> ClientIdentity | None:
        if self.target is None:
            return None
        if self._key is not None:
            key, alg = self._key
            return ClientIdentity(self.client_id, None, "private_key_jwt", key, alg, self.key_id)
        return ClientIdentity(self.client_id, self.client_secret, _secret_method(self.target))

    async def _obtain(self, target: Target, scopes: list[str] | None) -> None:
        form = {"grant_type": "client_credentials", "resource": target.resource_id}
        if scopes:
            form["scope"] = " ".join(scopes)
        client = self._client_identity()
        await self._keep(await self._token_request(form, client), client, scopes)


class EnterpriseManaged(_Silent):
    """Enterprise-managed authorization: trade the person's IdP ID token for an MCP access token.

    ``id_token``: the ID token from the enterprise IdP (a string, or a function returning a
    fresh one). ``idp_token_endpoint`` and ``idp_client_id``: where and as whom to exchange it.
    ``client_id`` / ``client_secret``: this client at the MCP server's authorization server.
    """

    def __init__(
        self,
        *,
        id_token: Assertion,
        idp_token_endpoint: str,
        idp_client_id: str,
        client_id: str,
        client_secret: str | None = None,
        idp_client_secret: str | None = None,
        scopes: Sequence[str] | None = None,
        store: TokenStore | None = None,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(scopes=scopes, store=store, timeout=timeout, dpop=False)
        check_url(idp_token_endpoint, "idp_token_endpoint", TokenEndpointError)
        self.id_token = id_token
        self.idp_token_endpoint = idp_token_endpoint
        self.idp_client_id = idp_client_id
        self.idp_client_secret = idp_client_secret
        self.client_id = client_id
        self.client_secret = client_secret

    def _client_identity(self) -> ClientIdentity | None:
        if self.target is None:
            return None
        if self.client_secret is None:
            return ClientIdentity(self.client_id)
        return ClientIdentity(self.client_id, self.client_secret, _secret_method(self.target))

    async def _obtain(self, target: Target, scopes: list[str] | None) -> None:
        exchange = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "audience": target.issuer,
            "resource": target.resource_id,
            "subject_token": await _resolve(self.id_token),
            "subject_token_type": ID_TOKEN,
        }
        if scopes:
            exchange["scope"] = " ".join(scopes)
        idp = ClientIdentity(
            self.idp_client_id,
            self.idp_client_secret,
            "client_secret_basic" if self.idp_client_secret else "none",
        )
        async with Fetcher(self.timeout) as http:
            grant = await request_token(
                http, self.idp_token_endpoint, exchange, idp, self.idp_token_endpoint, issued_token_type=ID_JAG
            )
        form = {"grant_type": JWT_BEARER, "assertion": grant.access_token, "resource": target.resource_id}
        if scopes:
            form["scope"] = " ".join(scopes)
        client = self._client_identity()
        await self._keep(await self._token_request(form, client), client, scopes)


class WorkloadIdentity(_Silent):
    """A workload signs in with its platform's JWT (RFC 7523 jwt-bearer grant, no person).

    ``assertion``: the JWT, or a function returning a fresh one (e.g. reading a projected
    service-account token file) called for every token request. ``client_id``: this client at
    the authorization server, when it needs one.
    """

    def __init__(
        self,
        *,
        assertion: Assertion,
        client_id: str | None = None,
        scopes: Sequence[str] | None = None,
        store: TokenStore | None = None,
        timeout: float = 30.0,
        dpop: bool | None = None,
    ) -> None:
        super().__init__(scopes=scopes, store=store, timeout=timeout, dpop=dpop)
        self.assertion = assertion
        self.client_id = client_id

    def _client_identity(self) -> ClientIdentity | None:
        return ClientIdentity(self.client_id) if self.client_id is not None else None

    async def _obtain(self, target: Target, scopes: list[str] | None) -> None:
        form = {"grant_type": JWT_BEARER, "assertion": await _resolve(self.assertion), "resource": target.resource_id}
        if scopes:
            form["scope"] = " ".join(scopes)
        client = self._client_identity()
        await self._keep(await self._token_request(form, client), client, scopes)
