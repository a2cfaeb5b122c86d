"""The HTTP transport's one seam for authorization: a typed hook, so transports import no auth code.

The transport asks the hook for headers before every HTTP request it makes (POST, GET, DELETE)
and shows it every 401 and 403; when the hook says so, the request goes out once more with
fresh headers. OAuth, DPoP, static tokens and "your own" all live behind this protocol in
``elicitkit.auth``; a transport only knows this shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

__all__ = ["CHALLENGE_STATUSES", "MAX_AUTH_RETRIES", "HTTPAuth"]

# The statuses a hook is shown: 401 (no or a bad token, or a DPoP nonce) and 403 (insufficient scope).
CHALLENGE_STATUSES = frozenset({401, 403})
# How often one HTTP request may go out again after a challenge: bounds step-up loops (the MCP
# authorization spec's "at most three" re-authorizations) whatever the hook answers.
MAX_AUTH_RETRIES = 3


@runtime_checkable
class HTTPAuth(Protocol):
    """What an HTTP transport calls to authorize its requests.

    ``headers`` returns the headers to add to one request (``Authorization``, ``DPoP``, ...);
    it may refresh a token first. ``on_challenge`` sees a 401/403 answer (its headers, the URL,
    and the auth headers that request carried) and returns True when a retry may now succeed
    (new token, new nonce, more scopes); it may raise an error that ends the request instead.
    """

    async def headers(self, method: str, url: str) -> Mapping[str, str]: ...

    async def on_challenge(
        self, status: int, headers: Mapping[str, str], url: str, sent: Mapping[str, str]
    ) -> bool: ...
