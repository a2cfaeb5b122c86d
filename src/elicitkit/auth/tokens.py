"""The token endpoint: client authentication, the request (with DPoP and its nonce retry), the answer.

Client authentication is one of ``none`` (client_id in the body), ``client_secret_basic``
(RFC 6749 section 2.3.1: both parts form-urlencoded, then Basic), ``client_secret_post`` or
``private_key_jwt`` (RFC 7523). A token response is checked before anything keeps it: a JSON
object with a string ``access_token`` and a known ``token_type``; an error response becomes
:class:`TokenEndpointError` naming the OAuth error code, never echoing a value sent.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

from elicitkit.auth.discovery import origin
from elicitkit.auth.errors import TokenEndpointError
from elicitkit.auth.http import Fetcher
from elicitkit.auth.jose import DPoPKey, SigningKey, client_assertion

__all__ = ["ClientIdentity", "DPoPState", "TokenSet", "merge_refreshed", "parse_token_response", "request_token"]

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_DESCRIPTION_MAX = 300


@dataclass(frozen=True)
class ClientIdentity:
    """Who the client is at one authorization server, and how it authenticates there."""

    client_id: str
    client_secret: str | None = None
    auth_method: str = "none"  # none | client_secret_basic | client_secret_post | private_key_jwt
    signing_key: SigningKey | None = field(default=None, repr=False)
    signing_alg: str | None = None
    key_id: str | None = None

    def __repr__(self) -> str:
        return f"ClientIdentity(client_id={self.client_id!r}, auth_method={self.auth_method!r})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"client_id": self.client_id, "token_endpoint_auth_method": self.auth_method}
        if self.client_secret is not None:
            out["client_secret"] = self.client_secret
        return out

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> ClientIdentity | None:
        client_id = value.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            return None
        secret = value.get("client_secret")
        method = value.get("token_endpoint_auth_method")
        return cls(
            client_id,
            secret if isinstance(secret, str) else None,
            method if isinstance(method, str) else ("client_secret_basic" if isinstance(secret, str) else "none"),
        )

    def apply(self, form: dict[str, str], headers: dict[str, str], audience: str) -> None:
        """Authenticate one token request: fill ``form`` and ``headers`` for this client's method."""
        method = self.auth_method
        if method == "client_secret_basic" and self.client_secret is not None:
            pair = f"{quote(self.client_id, safe='')}:{quote(self.client_secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        elif method == "client_secret_post" and self.client_secret is not None:
            form["client_id"] = self.client_id
            form["client_secret"] = self.client_secret
        elif method == "private_key_jwt" and self.signing_key is not None:
            form["client_id"] = self.client_id
            form["client_assertion_type"] = ASSERTION_TYPE
            form["client_assertion"] = client_assertion(
                self.client_id, audience, self.signing_key, self.signing_alg or "ES256", self.key_id
            )
        else:
            form["client_id"] = self.client_id


@dataclass(frozen=True)
class TokenSet:
    """An access token and what came with it. ``repr`` hides the tokens."""

    access_token: str = field(repr=False)
    token_type: str = "Bearer"  # "Bearer" or "DPoP"
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scope: str | None = None

    def expired(self, leeway: float = 60.0, now: float | None = None) -> bool:
        """True within ``leeway`` seconds of expiry: refresh before the server refuses it."""
        if self.expires_at is None:
            return False
        return (now if now is not None else time.time()) >= self.expires_at - leeway

    def to_json(self) -> dict[str, Any]:
        return {
            "access_token": self.access_token,
            "token_type": self.token_type,
            "expires_at": self.expires_at,
            "refresh_token": self.refresh_token,
            "scope": self.scope,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> TokenSet | None:
        token = value.get("access_token")
        if not isinstance(token, str) or not token:
            return None
        expires = value.get("expires_at")
        refresh = value.get("refresh_token")
        scope = value.get("scope")
        token_type = value.get("token_type")
        return cls(
            token,
            token_type if token_type in ("Bearer", "DPoP") else "Bearer",
            float(expires) if isinstance(expires, (int, float)) and not isinstance(expires, bool) else None,
            refresh if isinstance(refresh, str) else None,
            scope if isinstance(scope, str) else None,
        )


def _error_text(doc: Mapping[str, Any]) -> str:
    code = doc.get("error")
    text = code if isinstance(code, str) else "an unnamed error"
    description = doc.get("error_description")
    if isinstance(description, str) and description:
        text += f" ({description[:_DESCRIPTION_MAX]})"
    return text


def parse_token_response(
    doc: Mapping[str, Any], where: str, now: float | None = None, *, issued_token_type: str | None = None
) -> TokenSet:
    """Check a successful token response (RFC 6749 section 5.1) and keep what the flow needs.

    With ``issued_token_type``, a token exchange answer (RFC 8693 section 2.2.1): that type is
    required and ``token_type`` may be anything (``N_A`` for a grant that is not an access token).
    """
    token = doc.get("access_token")
    if not isinstance(token, str) or not token or any(c in token for c in "\r\n"):
        raise TokenEndpointError(f"{where} answered without a usable access_token; the server is misbehaving")
    token_type = doc.get("token_type")
    if issued_token_type is not None:
        if doc.get("issued_token_type") != issued_token_type:
            got = str(doc.get("issued_token_type"))[:80]
            raise TokenEndpointError(f"{where} issued a {got!r}, not the {issued_token_type!r} asked for")
        return TokenSet(token, "Bearer")
    if not isinstance(token_type, str) or token_type.lower() not in ("bearer", "dpop"):
        raise TokenEndpointError(f"{where} answered with token_type {str(token_type)[:40]!r}; expected Bearer or DPoP")
    expires_in = doc.get("expires_in")
    expires_at = None
    if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool) and expires_in > 0:
        expires_at = (now if now is not None else time.time()) + float(expires_in)
    refresh = doc.get("refresh_token")
    scope = doc.get("scope")
    return TokenSet(
        token,
        "DPoP" if token_type.lower() == "dpop" else "Bearer",
        expires_at,
        refresh if isinstance(refresh, str) and refresh else None,
        scope if isinstance(scope, str) else None,
    )


@dataclass
class DPoPState:
    """The key and the latest nonce per server origin (RFC 9449 section 8 and 9)."""

    key: DPoPKey
    nonces: dict[str, str] = field(default_factory=dict)


async def request_token(
    http: Fetcher,
    token_endpoint: str,
    form: Mapping[str, str],
    client: ClientIdentity | None,
    audience: str,
    *,
    dpop: DPoPState | None = None,
    error: type[TokenEndpointError] = TokenEndpointError,
    issued_token_type: str | None = None,
) -> TokenSet:
    """POST one token request and return the checked :class:`TokenSet`.

    With ``dpop``, every attempt carries a fresh proof; a ``use_dpop_nonce`` answer is retried
    once with the server's nonce. ``audience`` is the issuer (a client assertion's ``aud``).
    """
    where = f"the token endpoint {token_endpoint}"
    for attempt in range(2):
        body = dict(form)
        headers: dict[str, str] = {}
        if client is not None:
            client.apply(body, headers, audience)
        if dpop is not None:
            nonce = dpop.nonces.get(origin(token_endpoint))
            headers["DPoP"] = dpop.key.proof("POST", token_endpoint, nonce=nonce)
        # Not reaching the endpoint is not a refusal: it raises the plain TokenEndpointError.
        reply = await http.post_form(token_endpoint, body, "the token endpoint", TokenEndpointError, headers)
        if dpop is not None and reply.headers.get("DPoP-Nonce"):
            dpop.nonces[origin(token_endpoint)] = reply.headers["DPoP-Nonce"]
        if reply.ok:
            doc = reply.json_object("the token response", error)
            return parse_token_response(doc, where, issued_token_type=issued_token_type)
        try:
            doc = reply.json_object("the token endpoint's error", error)
        except TokenEndpointError:
            raise error(f"{where} refused the request with HTTP {reply.status} and no OAuth error") from None
        if (
            doc.get("error") == "use_dpop_nonce"
            and dpop is not None
            and attempt == 0
            and reply.headers.get("DPoP-Nonce")
        ):
            continue
        raise error(f"{where} refused the request: {_error_text(doc)} (HTTP {reply.status})")
    raise error(f"{where} kept asking for a new DPoP nonce; giving up")


def merge_refreshed(old: TokenSet, new: TokenSet) -> TokenSet:
    """A refresh that returned no new refresh token keeps the old one (rotation otherwise)."""
    if new.refresh_token is None and old.refresh_token is not None:
        return replace(new, refresh_token=old.refresh_token)
    return new
