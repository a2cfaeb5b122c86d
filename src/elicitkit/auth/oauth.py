"""``OAuth``: a person signs in (authorization code + PKCE), on every MCP protocol era.

The client identity is the MCP spec's order: pre-registered credentials when given, else a
client ID metadata document when the server supports them and a URL is given, else dynamic
registration (RFC 7591), kept per issuer in the token store (``application_type`` says
``native`` for a loopback redirect, ``web`` otherwise). The authorization request carries PKCE
S256 (refused when the server does not support it), a fresh ``state``, ``resource`` (RFC
8707: exactly the resource metadata's value) and the chosen scopes, plus ``offline_access``
when the authorization server lists it (and only then) so that a refresh token can come. The
redirect is checked before the code is used: an ``error`` is refused, ``state`` must match,
and ``iss`` (RFC 9207) must equal the issuer exactly when present, and be present when the
server advertises it.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode, urlsplit

from elicitkit.auth.base import Authorizer, TokenStore, client_key
from elicitkit.auth.errors import (
    AuthorizationDenied,
    IssuerMismatch,
    MetadataError,
    RegistrationError,
    StateMismatch,
)
from elicitkit.auth.http import Fetcher, is_loopback
from elicitkit.auth.provider import Target, TokenAuth
from elicitkit.auth.tokens import ClientIdentity
from elicitkit.errors import AuthError

__all__ = ["OAuth", "pkce_pair", "redirect_matches"]

OFFLINE_ACCESS = "offline_access"
GRANT_TYPES = ["authorization_code", "refresh_token"]


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier (64 unreserved characters) and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def redirect_matches(registered: str, redirect_uri: str) -> bool:
    """Whether a client registered with ``registered`` may use ``redirect_uri``.

    The same URI, or for an http loopback host the same URI on another port: RFC 8252 section
    7.3 has the authorization server accept any port there (oidc-provider does, for ``native``).
    """
    if registered == redirect_uri:
        return True
    old, new = urlsplit(registered), urlsplit(redirect_uri)
    if old.scheme != "http" or new.scheme != "http" or not is_loopback(old.hostname):
        return False
    try:
        _ = (old.port, new.port)  # a malformed port raises here
    except ValueError:
        return False
    same_host = (old.hostname or "").lower() == (new.hostname or "").lower()
    return same_host and (old.path, old.query, old.fragment) == (new.path, new.query, new.fragment)


def _default_authorizer() -> Authorizer:
    try:
        from elicitkit.auth.loopback import LoopbackAuthorizer  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - the loopback authorizer ships with elicitkit
        raise AuthError("no authorizer: pass OAuth(authorizer=...) to show the sign-in page to a person") from None
    authorizer: Authorizer = LoopbackAuthorizer()
    return authorizer


class OAuth(TokenAuth):
    """Sign a person in with the authorization code flow and keep their tokens.

    ``scopes``: ask for these instead of the server's hints. ``client_id`` (and
    ``client_secret``, ``token_endpoint_auth_method``): pre-registered credentials.
    ``client_metadata_url``: an https URL serving this client's metadata document, used as the
    client_id where the authorization server supports it. ``store`` keeps tokens and
    registrations between runs (default: this process only). ``authorizer`` shows the page to
    the person (default: the browser, over a loopback redirect). ``dpop``: bind tokens to a key
    (RFC 9449): True, False, or None to follow the server's challenge. ``timeout`` bounds each
    HTTP call of the flow (not the person's consent).
    """

    def __init__(
        self,
        *,
        scopes: Sequence[str] | None = None,
        client_name: str = "elicitkit",
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        client_metadata_url: str | None = None,
        store: TokenStore | None = None,
        authorizer: Authorizer | None = None,
        timeout: float = 30.0,
        dpop: bool | None = None,
    ) -> None:
        super().__init__(scopes=scopes, store=store, timeout=timeout, dpop=dpop)
        if client_secret is not None and client_id is None:
            raise ValueError("client_secret without client_id: pass both for a pre-registered client")
        if client_metadata_url is not None:
            parts = urlsplit(client_metadata_url)
            if parts.scheme != "https" or parts.path in ("", "/"):
                raise ValueError("client_metadata_url must be an https URL with a path (the client ID metadata spec)")
        self.client_name = client_name
        self.client_id = client_id
        self.client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.client_metadata_url = client_metadata_url
        self.authorizer = authorizer

    # -- the client identity ------------------------------------------------------------------

    def _client_identity(self) -> ClientIdentity | None:
        """The client the caller named: pre-registered credentials, else a client ID metadata document."""
        if self.target is None:
            return None
        if self.client_id is not None:
            return ClientIdentity(
                self.client_id, self.client_secret, self._auth_method(self.target, self.client_secret is not None)
            )
        if self.client_metadata_url is not None and self.target.auth_server.client_id_metadata_document_supported:
            return ClientIdentity(self.client_metadata_url, None, "none")
        return None

    def _auth_method(self, target: Target, has_secret: bool) -> str:
        if self.token_endpoint_auth_method is not None:
            return self.token_endpoint_auth_method
        if not has_secret:
            return "none"
        supported = target.auth_server.token_endpoint_auth_methods
        if supported is None or "client_secret_basic" in supported:
            return "client_secret_basic"
        return "client_secret_post"

    async def _identity_for(self, target: Target, redirect_uri: str) -> ClientIdentity:
        """The client for a new sign-in: the caller's, else the registration kept for this issuer, else a new one.

        A kept registration is reused when its redirect URI matches, a loopback one on any port
        (RFC 8252 section 7.3: the loopback listener gets a new port each time). Tokens record
        the client they were issued to, so replacing the kept registration strands none of them.
        """
        configured = self._client_identity()
        if configured is not None:
            return configured
        server = target.auth_server
        stored = await self.store.load(client_key(server.issuer))
        registered = stored.get("redirect_uris") if stored is not None else None
        if (
            stored is not None
            and isinstance(registered, list)
            and any(isinstance(uri, str) and redirect_matches(uri, redirect_uri) for uri in registered)
        ):
            identity = ClientIdentity.from_json(stored)
            if identity is not None:
                return identity
        if server.registration_endpoint is None:
            raise RegistrationError(
                f"the authorization server {server.issuer} supports neither dynamic client registration nor "
                "client ID metadata documents (or no client_metadata_url was given); "
                "register a client with it and pass OAuth(client_id=..., client_secret=...)"
            )
        return await self._register(target, redirect_uri)

    def _requested_auth_method(self, target: Target) -> str:
        if self.token_endpoint_auth_method is not None:
            return self.token_endpoint_auth_method
        supported = target.auth_server.token_endpoint_auth_methods
        if supported is None or "none" in supported:
            return "none"
        for method in ("client_secret_basic", "client_secret_post"):
            if method in supported:
                return method
        return "none"

    async def _register(self, target: Target, redirect_uri: str) -> ClientIdentity:
        """Dynamic client registration (RFC 7591); the registration is stored under the issuer."""
        server = target.auth_server
        assert server.registration_endpoint is not None
        requested = self._requested_auth_method(target)
        body: dict[str, Any] = {
            "client_name": self.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": GRANT_TYPES,
            "response_types": ["code"],
            "token_endpoint_auth_method": requested,
            "application_type": "native" if is_loopback(urlsplit(redirect_uri).hostname) else "web",
        }
        where = f"the registration endpoint {server.registration_endpoint}"
        async with Fetcher(self.timeout) as http:
            reply = await http.post_json(server.registration_endpoint, body, "client registration", RegistrationError)
        if not reply.ok:
            detail = ""
            try:
                doc = reply.json_object("the registration error", RegistrationError)
                if isinstance(doc.get("error"), str):
                    detail = f": {str(doc['error'])[:80]}"
                    if isinstance(doc.get("error_description"), str):
                        detail += f" ({str(doc['error_description'])[:200]})"
            except RegistrationError:
                pass
            raise RegistrationError(
                f"{where} refused to register this client (HTTP {reply.status}){detail}; "
                "register one by hand and pass OAuth(client_id=...)"
            )
        doc = reply.json_object("the registration response", RegistrationError)
        client_id = doc.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise RegistrationError(f"{where} answered without a client_id; the server is misbehaving")
        secret = doc.get("client_secret")
        secret = secret if isinstance(secret, str) and secret else None
        method = doc.get("token_endpoint_auth_method")
        if not isinstance(method, str):
            if secret is None:
                method = "none"
            elif requested in ("client_secret_basic", "client_secret_post"):
                method = requested
            else:
                method = self._auth_method(target, True)
        identity = ClientIdentity(client_id, secret, method)
        record = identity.to_json()
        record["redirect_uris"] = [redirect_uri]
        await self.store.save(client_key(server.issuer), record)
        return identity

    # -- the authorization code flow ---------------------------------------------------------

    def _with_offline_access(self, target: Target, scopes: list[str] | None) -> list[str] | None:
        """Add ``offline_access`` only when the authorization server lists it (SEP-2207)."""
        supported = target.auth_server.scopes_supported or ()
        if OFFLINE_ACCESS in supported and OFFLINE_ACCESS not in (scopes or []):
            return [*(scopes or []), OFFLINE_ACCESS]
        return scopes

    async def _obtain(self, target: Target, scopes: list[str] | None) -> None:
        server = target.auth_server
        if server.authorization_endpoint is None:
            raise MetadataError(
                f"the authorization server {server.issuer} has no authorization_endpoint; a person cannot sign in "
                "there (use ClientCredentials for a machine client)"
            )
        if server.from_metadata and "S256" not in (server.code_challenge_methods or ()):
            raise MetadataError(
                f"the authorization server {server.issuer} does not advertise PKCE S256 "
                "(code_challenge_methods_supported); refusing to sign in without it"
            )
        authorizer = self.authorizer or _default_authorizer()
        await authorizer.start()
        try:
            redirect_uri = authorizer.redirect_uri
            identity = await self._identity_for(target, redirect_uri)
            asked = self._with_offline_access(target, scopes)
            verifier, challenge = pkce_pair()
            state = secrets.token_urlsafe(32)
            params = {
                "response_type": "code",
                "client_id": identity.client_id,
                "redirect_uri": redirect_uri,
                "state": state,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": target.resource_id,
            }
            if asked:
                params["scope"] = " ".join(asked)
            separator = "&" if urlsplit(server.authorization_endpoint).query else "?"
            with self._consent_pause():  # the person may take minutes: no request times out meanwhile
                answer = await authorizer.authorize(server.authorization_endpoint + separator + urlencode(params))
        finally:
            await authorizer.close()
        code = self._check_redirect(target, answer, state)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "resource": target.resource_id,
        }
        tokens = await self._token_request(form, identity)
        await self._keep(tokens, identity, scopes)

    def _check_redirect(self, target: Target, answer: Mapping[str, str], state: str) -> str:
        """The code from the redirect, checked in the spec's order: iss (RFC 9207), state, error.

        ``iss`` comes first because a response from another issuer must not be acted on at all,
        not even its ``error`` shown (the 2026-07-28 authorization spec); compared exactly.
        """
        server = target.auth_server
        iss = answer.get("iss")
        if iss is not None and iss != server.issuer:
            raise IssuerMismatch(
                f"the sign-in redirect came from issuer {iss[:200]!r}, not {server.issuer!r}; refused (RFC 9207): "
                "another authorization server answered (a mix-up attack, or a misconfigured server)"
            )
        if iss is None and server.iss_parameter_supported:
            raise IssuerMismatch(
                f"the authorization server {server.issuer} advertises the iss parameter, but the redirect has none; "
                "refused (RFC 9207)"
            )
        if not secrets.compare_digest(str(answer.get("state", "")), state):
            raise StateMismatch(
                "the sign-in redirect carried another state than the one sent; refused (a forged or stale "
                "redirect, or two sign-ins at once): try again"
            )
        error = answer.get("error")
        if error:
            description = answer.get("error_description") or ""
            why = f"{error[:80]}" + (f" ({description[:200]})" if description else "")
            raise AuthorizationDenied(f"the authorization server {server.issuer} did not authorize: {why}")
        code = answer.get("code")
        if not code:
            raise AuthorizationDenied(f"the redirect from {server.issuer} carried neither a code nor an error")
        return code
