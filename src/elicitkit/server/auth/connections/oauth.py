"""The provider side of a connection: the authorization URL (code + PKCE), the code exchange,
refreshes, and who signed in (userinfo) — on :mod:`elicitkit.auth`'s discovery, PKCE and token
endpoint code, so the server side adds no OAuth or crypto of its own.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from urllib.parse import urlencode, urlsplit

from elicitkit.auth.errors import AuthorizationDenied, IssuerMismatch, RefreshRefused, StateMismatch
from elicitkit.auth.http import Fetcher
from elicitkit.auth.oauth import pkce_pair
from elicitkit.auth.tokens import TokenSet, merge_refreshed, request_token
from elicitkit.server.auth.connections.providers import Endpoints, Provider

__all__ = ["authorization_url", "check_callback", "exchange", "refresh", "userinfo_subject"]


def authorization_url(
    provider: Provider, endpoints: Endpoints, redirect_uri: str, state: str, scopes: tuple[str, ...] = ()
) -> tuple[str, str]:
    """Where to send the browser, and the PKCE verifier to keep for the exchange."""
    verifier, challenge = pkce_pair()
    params = {
        "response_type": "code",
        "client_id": provider.client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **provider.params,
    }
    asked = scopes or tuple(provider.scopes)
    if asked:
        params["scope"] = " ".join(asked)
    separator = "&" if urlsplit(endpoints.authorization_endpoint).query else "?"
    return endpoints.authorization_endpoint + separator + urlencode(params), verifier


def check_callback(endpoints: Endpoints, provider: Provider, query: Mapping[str, str], secret: str) -> str:
    """The code from a callback, checked in the spec's order: ``iss`` (RFC 9207), ``state``, ``error``."""
    iss = query.get("iss")
    expected = endpoints.issuer
    if iss is not None and expected is not None and iss != expected:
        raise IssuerMismatch(
            f"the callback came from issuer {iss[:200]!r}, not {provider.shown}'s {expected!r}; refused (RFC 9207)"
        )
    if iss is None and endpoints.iss_parameter_supported:
        raise IssuerMismatch(f"{provider.shown} sends the iss parameter, but this callback has none (RFC 9207)")
    state_secret = query.get("state", "").partition(".")[2]
    if not secrets.compare_digest(state_secret.encode(), secret.encode()):
        raise StateMismatch("the callback's state is not this sign-in's; refused (a forged or stale callback)")
    error = query.get("error")
    if error:
        description = query.get("error_description") or ""
        why = error[:80] + (f" ({description[:200]})" if description else "")
        raise AuthorizationDenied(f"{provider.shown} did not authorize: {why}")
    code = query.get("code")
    if not code:
        raise AuthorizationDenied(f"the callback from {provider.shown} carried neither a code nor an error")
    return code


async def exchange(provider: Provider, endpoints: Endpoints, code: str, redirect_uri: str, verifier: str) -> TokenSet:
    """The code for tokens (:class:`~elicitkit.auth.errors.TokenEndpointError` when refused, hung, garbage)."""
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "code_verifier": verifier}
    async with Fetcher(provider.timeout) as http:
        return await request_token(
            http, endpoints.token_endpoint, form, provider.identity(), endpoints.issuer or endpoints.token_endpoint
        )


async def refresh(provider: Provider, endpoints: Endpoints, tokens: TokenSet) -> TokenSet:
    """A fresh access token from the refresh token (:class:`RefreshRefused` when refused)."""
    assert tokens.refresh_token is not None
    form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
    async with Fetcher(provider.timeout) as http:
        new = await request_token(
            http,
            endpoints.token_endpoint,
            form,
            provider.identity(),
            endpoints.issuer or endpoints.token_endpoint,
            error=RefreshRefused,
        )
    return merge_refreshed(tokens, new)


async def userinfo_subject(provider: Provider, endpoints: Endpoints, tokens: TokenSet) -> str:
    """Who signed in: the ``sub`` the provider's userinfo endpoint reports for the new token."""
    if endpoints.userinfo_endpoint is None:
        raise AuthorizationDenied(f"{provider.shown} has no userinfo endpoint: cannot tell who signed in")
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=provider.timeout)
    headers = {"Authorization": f"Bearer {tokens.access_token}", "Accept": "application/json"}
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(endpoints.userinfo_endpoint, headers=headers, allow_redirects=False) as resp,
        ):
            body = await resp.json(content_type=None) if resp.status == 200 else None
    except (aiohttp.ClientError, TimeoutError, ValueError):
        body = None
    subject = body.get("sub") if isinstance(body, dict) else None
    if not isinstance(subject, str) or not subject:
        raise AuthorizationDenied(f"{provider.shown}'s userinfo endpoint did not say who signed in")
    return subject
