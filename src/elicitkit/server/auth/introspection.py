"""Opaque access tokens checked by the authorization server's introspection endpoint (RFC 7662).

Each answer is kept for ``cache_seconds`` (never past the token's expiry) under a digest of the
token, so a busy client costs one introspection per token and minute, not one per call; an
endpoint that hangs costs at most ``timeout`` and the request gets a 401 saying so.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections import OrderedDict
from urllib.parse import quote

from elicitkit.auth.http import Fetcher
from elicitkit.server.auth.tokens import AccessToken, InvalidToken, client_of, scopes_of

__all__ = ["IntrospectionVerifier"]


class IntrospectionVerifier:
    """Asks ``endpoint`` about each token, authenticating as ``client_id``/``client_secret``."""

    def __init__(
        self,
        endpoint: str,
        *,
        client_id: str,
        client_secret: str,
        audience: str | None = None,
        issuer: str | None = None,
        timeout: float = 5.0,
        cache_seconds: float = 60.0,
        cache_size: int = 10_000,
    ) -> None:
        self.endpoint = endpoint
        self.audience = audience
        self.issuer = issuer
        self.timeout = timeout
        self.cache_seconds = cache_seconds
        self.cache_size = cache_size
        basic = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}".encode()
        self._authorization = "Basic " + base64.b64encode(basic).decode()
        self._cache: OrderedDict[bytes, tuple[float, AccessToken | str]] = OrderedDict()
        self.calls = 0  # introspection requests made (tests read it)

    async def verify(self, token: str) -> AccessToken:
        key = hashlib.sha256(token.encode()).digest()
        now = time.time()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            self._cache.move_to_end(key)
            return _result(cached[1])
        self.calls += 1
        outcome: AccessToken | str
        try:
            outcome = await self._ask(token)
        except InvalidToken as exc:
            return _result(str(exc))  # not cached: the endpoint may be back in a moment
        until = now + self.cache_seconds
        if isinstance(outcome, AccessToken) and outcome.expires_at is not None:
            until = min(until, outcome.expires_at)
        self._cache[key] = (until, outcome)
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return _result(outcome)

    async def _ask(self, token: str) -> AccessToken | str:
        what = "the token introspection endpoint"
        async with Fetcher(self.timeout) as http:
            reply = await http.post_form(
                self.endpoint,
                {"token": token, "token_type_hint": "access_token"},
                what,
                InvalidToken,
                {"Authorization": self._authorization},
            )
        if not reply.ok:
            raise InvalidToken(f"{what} at {self.endpoint} answered HTTP {reply.status}")
        claims = reply.json_object(what, InvalidToken)
        if claims.get("active") is not True:
            return "the token is not active (revoked, expired or unknown to the authorization server)"
        if self.issuer is not None and claims.get("iss", self.issuer) != self.issuer:
            return "the token was issued by another authorization server"
        if self.audience is not None:
            aud = claims.get("aud")
            audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
            if self.audience not in audiences:
                return "the token is for another resource (its audience is not this server)"
        exp = claims.get("exp")
        if isinstance(exp, (int, float)) and not isinstance(exp, bool) and exp < time.time():
            return "the token has expired"
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            sub = client_of(claims)  # a client-credentials token: the client is the subject
        if not sub:
            return "the token names no subject"
        expires = float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None
        return AccessToken(sub, client_of(claims), scopes_of(claims), expires, claims)


def _result(outcome: AccessToken | str) -> AccessToken:
    if isinstance(outcome, str):
        raise InvalidToken(outcome)
    return outcome
