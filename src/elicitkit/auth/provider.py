"""What every OAuth auth object shares: answer 401/403, discover, keep and renew tokens, sign DPoP.

:class:`TokenAuth` implements the transport's hook
(:class:`~elicitkit.transports.http.auth.HTTPAuth`). On a 401 it reads the challenge, fetches
the protected-resource metadata again (so a server that moved to another authorization server
is noticed), checks the resource, looks the authorization server up, and then uses the first
of: a token already kept for this server and issuer, a refresh, a new grant (the subclass's:
authorization code, client credentials, ...). On a 403 ``insufficient_scope`` it asks again
for the union of the scopes so far and the challenge's, at most :data:`MAX_STEP_UPS` times. A
token close to expiry is refreshed before the request goes out. A DPoP nonce challenge is
answered with a new proof, not a new authorization.

Concurrent requests share one lock: a request that was refused with a token already replaced
is simply sent again. Credentials are kept per issuer; a new issuer never sees another's. Each
kept token set records the client it was issued to, and a refresh always goes as that client
(a refresh token is bound to its client, RFC 6749 section 6), whatever registration is current.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from elicitkit.auth.base import MemoryTokenStore, TokenStore, token_key
from elicitkit.auth.challenge import Challenge, challenges_from
from elicitkit.auth.discovery import AuthServer, ProtectedResource, discover_auth_server, discover_resource, origin
from elicitkit.auth.errors import InsufficientScope, RefreshRefused
from elicitkit.auth.http import Fetcher
from elicitkit.auth.jose import DPoPKey
from elicitkit.auth.tokens import ClientIdentity, DPoPState, TokenSet, merge_refreshed, request_token

__all__ = ["MAX_STEP_UPS", "Target", "TokenAuth"]

logger = logging.getLogger("elicitkit.auth")

MAX_STEP_UPS = 2  # re-authorizations on 403 after the first: three authorizations in all


@dataclass(frozen=True)
class Target:
    """Where tokens come from for one server: its metadata and its authorization server's."""

    server_url: str
    resource: ProtectedResource
    auth_server: AuthServer

    @property
    def issuer(self) -> str:
        return self.auth_server.issuer

    @property
    def resource_id(self) -> str:
        return self.resource.resource


def _sent_token(sent: Mapping[str, str]) -> str | None:
    value = sent.get("Authorization")
    if not value or " " not in value:
        return None
    return value.split(" ", 1)[1]


def _pick(challenges: Sequence[Challenge]) -> Challenge:
    """The challenge to follow: Bearer or DPoP (whichever carries more), else an empty one."""
    ours = [c for c in challenges if c.scheme in ("bearer", "dpop")]
    if not ours:
        return Challenge("bearer", {})
    return max(ours, key=lambda c: len(c.params))


class TokenAuth:
    """The shared engine of the OAuth auth objects; subclasses say how a new token is obtained."""

    def __init__(
        self,
        *,
        scopes: Sequence[str] | None = None,
        store: TokenStore | None = None,
        timeout: float = 30.0,
        dpop: bool | None = None,
    ) -> None:
        self.scopes = list(scopes) if scopes is not None else None
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.timeout = timeout
        self.dpop = dpop
        self.target: Target | None = None
        self.tokens: TokenSet | None = None
        self._issued_to: ClientIdentity | None = None  # the client ``tokens`` were issued to
        self.requested_scopes: list[str] | None = None
        self._dpop_state: DPoPState | None = None
        self._step_ups = 0
        self._lock: asyncio.Lock | None = None
        self._consent_pause: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext

    def pause_during_consent(self, pause: Callable[[], AbstractContextManager[None]]) -> None:
        """``Client`` hands over its ``timeouts_paused``: request timeouts stand still while a person signs in."""
        self._consent_pause = pause

    def __repr__(self) -> str:
        issuer = self.target.issuer if self.target else None
        return f"{type(self).__name__}(issuer={issuer!r}, has_token={self.tokens is not None})"

    # -- the transport's hook ------------------------------------------------------------

    def _locked(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def headers(self, method: str, url: str) -> Mapping[str, str]:
        """``Authorization`` (and ``DPoP``) for one request; renews a token about to expire first."""
        async with self._locked():
            if self.tokens is not None and self.target is not None and self.tokens.expired():
                await self._renew()
            tokens = self.tokens
        if tokens is None:
            return {}
        if tokens.token_type == "DPoP" and self._dpop_state is not None:
            state = self._dpop_state
            proof = state.key.proof(method, url, access_token=tokens.access_token, nonce=state.nonces.get(origin(url)))
            return {"Authorization": f"DPoP {tokens.access_token}", "DPoP": proof}
        return {"Authorization": f"Bearer {tokens.access_token}"}

    async def on_challenge(self, status: int, headers: Mapping[str, str], url: str, sent: Mapping[str, str]) -> bool:
        """A 401/403 for ``url``: True once a retry may succeed; an AuthError when it cannot."""
        challenges = challenges_from(headers)
        challenge = _pick(challenges)
        async with self._locked():
            nonce = headers.get("DPoP-Nonce")
            if nonce and self._dpop_state is not None:
                self._dpop_state.nonces[origin(url)] = nonce
                if status == 401 and any(c.scheme == "dpop" and c.get("error") == "use_dpop_nonce" for c in challenges):
                    return True
            current = self.tokens.access_token if self.tokens is not None else None
            if current is not None and _sent_token(sent) != current:
                return True  # another request renewed the token meanwhile
            if status == 403:
                if challenge.get("error") != "insufficient_scope":
                    return False
                await self._step_up(url, challenge, challenges)
                return True
            await self._unauthorized(url, challenge, challenges)
            return True

    async def login(self, server_url: str, *, force: bool = False) -> TokenSet:
        """Get a token for ``server_url`` now, without an MCP request (``elicitkit auth login``).

        Discovery starts from the well-known metadata URLs (there is no 401 to read). A kept token
        that is still valid is returned as is unless ``force``; an expired one is refreshed.
        """
        no_challenge = Challenge("bearer", {})
        async with self._locked():
            target = await self._discover(server_url, no_challenge, [])
            if not force:
                stored = await self._load_tokens(target)
                if stored is not None and not stored.expired():
                    self.tokens = stored
                    return stored
                if stored is not None and stored.refresh_token is not None:
                    self.tokens = stored
                    try:
                        await self._refresh()
                    except RefreshRefused as exc:
                        logger.info("refresh refused, authorizing again: %s", exc)
                    else:
                        assert self.tokens is not None
                        return self.tokens
            self.tokens = None
            await self._obtain(target, self._initial_scopes(target, no_challenge))
            assert self.tokens is not None
            return self.tokens

    # -- 401 and 403 ------------------------------------------------------------------------

    async def _unauthorized(self, url: str, challenge: Challenge, challenges: Sequence[Challenge]) -> None:
        sent_token = self.tokens.access_token if self.tokens is not None else None
        target = await self._discover(url, challenge, challenges)
        stored = await self._load_tokens(target)
        if stored is not None and stored.access_token != sent_token and not stored.expired():
            self.tokens = stored
            return
        if stored is not None and stored.refresh_token is not None:
            self.tokens = stored
            try:
                await self._refresh()
                return
            except RefreshRefused as exc:
                logger.info("refresh refused, authorizing again: %s", exc)
        self.tokens = None
        self._step_ups = 0
        await self._obtain(target, self._initial_scopes(target, challenge))

    async def _step_up(self, url: str, challenge: Challenge, challenges: Sequence[Challenge]) -> None:
        self._step_ups += 1
        if self._step_ups > MAX_STEP_UPS:
            raise InsufficientScope(
                f"the server at {url} still answers 403 insufficient_scope after {MAX_STEP_UPS} re-authorizations; "
                "the account may lack the permission it needs (ask the server's operator)"
            )
        target = self.target or await self._discover(url, challenge, challenges)
        wanted = list(self.requested_scopes or [])
        for scope in challenge.scopes or []:
            if scope not in wanted:
                wanted.append(scope)
        self.tokens = None
        await self._obtain(target, wanted or None)

    def _initial_scopes(self, target: Target, challenge: Challenge) -> list[str] | None:
        """Explicit scopes, else the challenge's, else the resource's ``scopes_supported``, else none."""
        if self.scopes is not None:
            return list(self.scopes) or None
        if challenge.scopes:
            return challenge.scopes
        if target.resource.scopes_supported:
            return list(target.resource.scopes_supported)
        return None

    # -- discovery -------------------------------------------------------------------------

    async def _discover(self, url: str, challenge: Challenge, challenges: Sequence[Challenge]) -> Target:
        """PRM (fresh each 401: the server may have moved), then the authorization server."""
        async with Fetcher(self.timeout) as http:
            resource = await discover_resource(http, url, challenge.get("resource_metadata"))
            issuer = resource.authorization_servers[0]
            same = self.target is not None and self.target.resource.authorization_servers[0] == issuer
            if self.target is not None and same:
                auth_server = self.target.auth_server
            else:
                auth_server = await discover_auth_server(http, issuer, allow_fallback=resource.metadata_url is None)
        if self.target is not None and not same:
            logger.info("the server moved from %s to %s: new credentials", self.target.issuer, issuer)
            self.tokens = None
            self._issued_to = None
            self._forget_issuer()
        self.target = Target(url, resource, auth_server)
        self._choose_dpop(auth_server, challenges)
        return self.target

    def _forget_issuer(self) -> None:
        """Drop what belongs to the previous authorization server (subclasses: the client identity)."""

    def _choose_dpop(self, auth_server: AuthServer, challenges: Sequence[Challenge]) -> None:
        supported = "ES256" in (auth_server.dpop_signing_algs or ())
        wanted = self.dpop if self.dpop is not None else any(c.scheme == "dpop" for c in challenges)
        if wanted and supported:
            if self._dpop_state is None:
                self._dpop_state = DPoPState(DPoPKey())
        else:
            self._dpop_state = None

    # -- tokens ------------------------------------------------------------------------------

    async def _obtain(self, target: Target, scopes: list[str] | None) -> None:
        """Get a new token for ``target`` (authorization code, client credentials, ...): subclasses."""
        raise NotImplementedError

    async def _token_request(self, form: dict[str, str], client: ClientIdentity | None) -> TokenSet:
        assert self.target is not None
        async with Fetcher(self.timeout) as http:
            return await request_token(
                http, self.target.auth_server.token_endpoint, form, client, self.target.issuer, dpop=self._dpop_state
            )

    def _client_identity(self) -> ClientIdentity | None:
        """The client as configured by the caller (subclasses know theirs), None when it must be found."""
        return None

    async def _renew(self) -> None:
        """A token near expiry: refresh it, else obtain a new one without a person, else drop it."""
        assert self.target is not None
        try:
            if self.tokens is not None and self.tokens.refresh_token is not None:
                await self._refresh()
                return
        except RefreshRefused as exc:
            logger.info("refresh refused: %s", exc)
        self.tokens = None
        if self._can_obtain_silently():
            await self._obtain(self.target, self.requested_scopes)

    def _can_obtain_silently(self) -> bool:
        """Whether :meth:`_obtain` needs no person (client credentials do; authorization code does not)."""
        return False

    async def _refresh(self) -> None:
        """The refresh grant (with rotation); :class:`RefreshRefused` when the server says no."""
        assert self.target is not None and self.tokens is not None and self.tokens.refresh_token is not None
        form = {"grant_type": "refresh_token", "refresh_token": self.tokens.refresh_token}
        form["resource"] = self.target.resource_id
        try:
            async with Fetcher(self.timeout) as http:
                fresh = await request_token(
                    http,
                    self.target.auth_server.token_endpoint,
                    form,
                    self._issued_to,
                    self.target.issuer,
                    dpop=self._dpop_state,
                    error=RefreshRefused,
                )
        except RefreshRefused as exc:  # the server said no: that refresh token is dead
            await self._drop_tokens()
            raise RefreshRefused(f"{exc}; authorize again") from None
        await self._keep(merge_refreshed(self.tokens, fresh), self._issued_to)

    async def _keep(self, tokens: TokenSet, client: ClientIdentity | None, scopes: list[str] | None = None) -> None:
        """Use ``tokens`` (issued to ``client``) from now on; store both under (resource, issuer)."""
        assert self.target is not None
        self.tokens = tokens
        self._issued_to = client
        if scopes is not None:
            self.requested_scopes = scopes
        record: dict[str, Any] = tokens.to_json()
        record["issuer"] = self.target.issuer
        record["resource"] = self.target.resource_id
        record["requested_scopes"] = self.requested_scopes
        if client is not None:
            record["client"] = client.to_json()  # a private key is never stored: only its client_id
        if self._dpop_state is not None and tokens.token_type == "DPoP":
            record["dpop_jwk"] = self._dpop_state.key.to_jwk()
        await self.store.save(token_key(self.target.resource_id, self.target.issuer), record)

    async def _load_tokens(self, target: Target) -> TokenSet | None:
        if self.tokens is not None:
            return self.tokens
        record = await self.store.load(token_key(target.resource_id, target.issuer))
        if record is None:
            return None
        tokens = TokenSet.from_json(record)
        if tokens is None:
            return None
        if tokens.token_type == "DPoP":
            jwk = record.get("dpop_jwk")
            if not isinstance(jwk, dict):
                return None
            try:
                self._dpop_state = DPoPState(DPoPKey.from_jwk(jwk))
            except ValueError:
                return None
        scopes = record.get("requested_scopes")
        if isinstance(scopes, list) and all(isinstance(s, str) for s in scopes):
            self.requested_scopes = scopes
        self._issued_to = self._kept_client(record.get("client"))
        return tokens

    def _kept_client(self, kept: object) -> ClientIdentity | None:
        """The client a stored token set was issued to; the configured one when it is that same client.

        The configured identity wins for the same client_id because it carries what is not
        stored (a private key) and the caller's current secret. A record from before clients
        were kept with tokens falls back to the configured client.
        """
        configured = self._client_identity()
        stored = ClientIdentity.from_json(kept) if isinstance(kept, dict) else None
        if stored is None or (configured is not None and configured.client_id == stored.client_id):
            return configured
        return stored

    async def _drop_tokens(self) -> None:
        if self.target is not None:
            await self.store.delete(token_key(self.target.resource_id, self.target.issuer))
        self.tokens = None
        self._issued_to = None
