"""JWT access tokens (RFC 9068) checked against the authorization server's JWKS, on joserfc.

The keys are fetched once and kept; a token signed with a key id the set does not hold makes
one refetch (the server rotated its keys), at most every ``refresh_interval`` seconds, so a
stream of tokens with made-up key ids cannot turn this server into a JWKS hammer. Only the
listed asymmetric algorithms are accepted (``alg: none`` and HMAC never are). The claims:
``iss`` exactly the issuer, ``aud`` naming this resource (RFC 8707), ``exp`` in the future
(``leeway`` seconds of clock skew), ``nbf``/``iat`` not in the future, a ``sub``.

A token that passed is remembered (``cache_size`` of them, until its expiry): a client sends the
same token with every call, and checking its signature again each time would be the gate's
whole cost. Only tokens that passed are kept, so a refused one is refused again in full.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from elicitkit.auth.http import Fetcher
from elicitkit.server.auth.tokens import AccessToken, InvalidToken, client_of, scopes_of

if TYPE_CHECKING:  # joserfc loads with the first key set, not with ``import elicitkit``
    from joserfc.errors import JoseError
    from joserfc.jwk import KeySet

__all__ = ["DEFAULT_ALGORITHMS", "JWTVerifier"]

DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")
_SYMMETRIC = {"HS256", "HS384", "HS512", "none"}
_DISCOVERY = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


class JWTVerifier:
    """Verifies JWT access tokens for ``audience`` issued by ``issuer`` (keys from ``jwks_uri``,
    else from the issuer's metadata)."""

    def __init__(
        self,
        issuer: str,
        audience: str,
        *,
        jwks_uri: str | None = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        leeway: float = 60.0,
        refresh_interval: float = 30.0,
        timeout: float = 5.0,
        cache_size: int = 1024,
    ) -> None:
        refused = _SYMMETRIC.intersection(algorithms)
        if refused:
            raise ValueError(f"algorithms {sorted(refused)} cannot verify an access token from another party")
        self.issuer = issuer
        self.audience = audience
        self.jwks_uri = jwks_uri
        self.algorithms = list(algorithms)
        self.leeway = leeway
        self.refresh_interval = refresh_interval
        self.timeout = timeout
        self._keys: KeySet | None = None
        self._fetched_at = -float("inf")
        self._lock = anyio.Lock()
        self.fetches = 0  # how many times the JWKS was fetched (a test or a health check reads it)
        self.cache_size = cache_size
        self._verified: OrderedDict[str, AccessToken] = OrderedDict()

    async def verify(self, token: str) -> AccessToken:
        known = self._verified.get(token)
        if known is not None:
            if known.expires_at is not None and known.expires_at + self.leeway >= time.time():
                return known
            del self._verified[token]
        verified = await self._verify(token)
        if self.cache_size > 0:
            self._verified[token] = verified
            if len(self._verified) > self.cache_size:
                self._verified.popitem(last=False)
        return verified

    async def _verify(self, token: str) -> AccessToken:
        keys = self._keys if self._keys is not None else await self._refresh(force=True)
        decoded = self._decode(token, keys)
        if decoded is None:  # a key id the set does not hold: the keys may have rotated
            fresh = await self._refresh(force=False)
            decoded = self._decode(token, fresh) if fresh is not keys else None
            if decoded is None:
                raise InvalidToken("the token is signed with a key the authorization server does not list")
        return self._check(decoded.claims)

    def _decode(self, token: str, keys: KeySet) -> Any | None:
        """The decoded token; None when it names a key id that ``keys`` does not hold."""
        from joserfc import jwt
        from joserfc.errors import InvalidKeyIdError, JoseError

        try:
            return jwt.decode(token, keys, algorithms=self.algorithms)
        except InvalidKeyIdError:
            return None
        except JoseError as exc:
            raise InvalidToken(_why(exc)) from None

    def _check(self, claims: dict[str, Any]) -> AccessToken:
        if claims.get("iss") != self.issuer:
            raise InvalidToken("the token was issued by another authorization server")
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if self.audience not in audiences:
            raise InvalidToken("the token is for another resource (its audience is not this server)")
        now = time.time()
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)) or isinstance(exp, bool):
            raise InvalidToken("the token has no expiry")
        if exp + self.leeway < now:
            raise InvalidToken("the token has expired")
        for name in ("nbf", "iat"):
            value = claims.get(name)
            if isinstance(value, (int, float)) and value - self.leeway > now:
                raise InvalidToken(f"the token is not valid yet ({name} is in the future)")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            raise InvalidToken("the token names no subject")
        return AccessToken(sub, client_of(claims), scopes_of(claims), float(exp), claims)

    async def _refresh(self, *, force: bool) -> KeySet:
        """The key set, fetched again unless it was fetched within ``refresh_interval``."""
        async with self._lock:
            now = time.monotonic()
            if self._keys is not None and (not force and now - self._fetched_at < self.refresh_interval):
                return self._keys
            if self._keys is not None and force:
                return self._keys  # another request fetched it while this one waited
            self._fetched_at = now
            self.fetches += 1
            try:
                self._keys = await self._fetch()
            except InvalidToken:
                if self._keys is None:
                    raise
            return self._keys

    async def _fetch(self) -> KeySet:
        what = "the authorization server's keys (JWKS)"
        async with Fetcher(self.timeout) as http:
            uri = self.jwks_uri or await self._discover(http)
            reply = await http.get(uri, what, InvalidToken)
            if not reply.ok:
                raise InvalidToken(f"{what} at {uri} answered HTTP {reply.status}")
            document = reply.json_object(what, InvalidToken)
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        try:
            return KeySet.import_key_set(document)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError, KeyError):
            raise InvalidToken(f"{what} at {uri} is not a usable JWK set") from None

    async def _discover(self, http: Fetcher) -> str:
        for suffix in _DISCOVERY:
            reply = await http.get(
                self.issuer.rstrip("/") + suffix, "the authorization server's metadata", InvalidToken
            )
            if reply.ok:
                uri = reply.json_object("the authorization server's metadata", InvalidToken).get("jwks_uri")
                if isinstance(uri, str) and uri:
                    self.jwks_uri = uri
                    return uri
        raise InvalidToken(f"the authorization server {self.issuer} publishes no jwks_uri")


def _why(exc: JoseError) -> str:
    """joserfc's error in words, without the token."""
    name = type(exc).__name__
    if name == "BadSignatureError":
        return "the token's signature does not verify"
    if name == "UnsupportedAlgorithmError":
        return "the token is signed with an algorithm this server does not accept"
    if name in ("DecodeError", "MissingKeyError", "InvalidPayloadError"):
        return "the token is not a well-formed JWT"
    return f"the token was refused ({getattr(exc, 'error', name)})"
