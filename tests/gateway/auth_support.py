"""What the gateway's auth tests share: machine clients of the real oidc-provider, a backend
verifier that keeps every token it is shown (to look for them in the logs), and a host's token."""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import BaseModel

from elicitkit.server.auth import AccessToken, JWTVerifier
from kit.oidc import AuthorizationServer

HOST_SECRET = "host-secret-that-is-long-enough-for-hs256-too"


def machine(client_id: str, secret: str = HOST_SECRET) -> dict[str, Any]:
    """A client of the authorization server that signs in as itself (client credentials)."""
    return {
        "client_id": client_id,
        "client_secret": secret,
        "grant_types": ["client_credentials"],
        "redirect_uris": [],
        "response_types": [],
    }


class Recording:
    """The backend's verifier, keeping every token it was shown."""

    def __init__(self, inner: JWTVerifier) -> None:
        self.inner = inner
        self.seen: list[str] = []

    async def verify(self, token: str) -> AccessToken:
        self.seen.append(token)
        return await self.inner.verify(token)


class Seats(BaseModel):
    seats: int


async def token_for(provider: AuthorizationServer, client_id: str, resource: str) -> str:
    """A host's access token for ``resource`` (client credentials, ``mcp:tools``)."""
    async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
        answer = await http.post(
            provider.metadata["token_endpoint"],
            data={"grant_type": "client_credentials", "resource": resource, "scope": "mcp:tools"},
            auth=(client_id, HOST_SECRET),
        )
    assert answer.status_code == 200, answer.text
    token = answer.json()["access_token"]
    assert isinstance(token, str)
    return token
