"""An :class:`~elicitkit.auth.Authorizer` with no person: it follows the authorization URL itself.

For test authorization servers that consent at once (the conformance suite's answer the
authorization request with a redirect): GET the URL without following redirects and return
the query parameters of the ``Location`` it points to. Nothing listens on ``redirect_uri``;
it is only the address the server redirects to.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, urljoin, urlsplit

import aiohttp

from elicitkit.auth.errors import AuthorizationDenied

__all__ = ["RedirectFollower"]


class RedirectFollower:
    """Consent without a browser: read the authorization endpoint's redirect straight away."""

    def __init__(self, redirect_uri: str = "http://localhost:3000/callback", timeout: float = 30.0) -> None:
        self.redirect_uri = redirect_uri
        self.timeout = timeout
        self.visited: list[str] = []  # the authorization URLs, for tests to inspect

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def authorize(self, authorization_url: str) -> Mapping[str, str]:
        self.visited.append(authorization_url)
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with (
            aiohttp.ClientSession(timeout=timeout) as http,
            http.get(authorization_url, allow_redirects=False) as resp,
        ):
            location = resp.headers.get("Location")
        if resp.status not in (301, 302, 303, 307, 308) or not location:
            raise AuthorizationDenied(f"the authorization endpoint answered HTTP {resp.status} without a redirect")
        target = urljoin(authorization_url, location)
        return dict(parse_qsl(urlsplit(target).query, keep_blank_values=True))
