"""A server written with the official ``mcp`` SDK behind its own bearer auth (a resource server only).

    python official_protected_server.py PORT ISSUER

The SDK serves the protected resource metadata and answers 401 with its ``WWW-Authenticate``;
its :class:`TokenVerifier` here checks oidc-provider's JWT access tokens (RFC 9068) against the
issuer's JWKS with joserfc. Nothing here imports elicitkit: this is "a server somebody else wrote".
"""

from __future__ import annotations

import json
import sys
import urllib.request
import warnings
from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

warnings.simplefilter("ignore")

SCOPE = "mcp:tools"


def fetch(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


class JwtVerifier:
    """Accept a JWT access token from ``issuer`` for ``resource`` carrying the scope; else None."""

    def __init__(self, issuer: str, resource: str) -> None:
        self.issuer = issuer
        self.resource = resource
        self.keys: KeySet | None = None

    async def verify_token(self, token: str) -> AccessToken | None:
        if self.keys is None:
            self.keys = KeySet.import_key_set(
                fetch(fetch(self.issuer + "/.well-known/openid-configuration")["jwks_uri"])
            )
        try:
            decoded = jwt.decode(token, self.keys, algorithms=["RS256"])
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": self.resource},
                exp={"essential": True},
            ).validate(decoded.claims)
        except JoseError:
            return None
        claims = decoded.claims
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=int(claims["exp"]),
            resource=self.resource,
            subject=str(claims.get("sub")),
        )


class Name(BaseModel):
    name: str = Field(description="Who is calling")


def build(port: int, issuer: str) -> MCPServer:
    resource = f"http://127.0.0.1:{port}/mcp"
    server = MCPServer(
        name="official-protected",
        version="1.0.0",
        log_level="WARNING",
        token_verifier=JwtVerifier(issuer, resource),
        auth=AuthSettings(
            issuer_url=issuer,  # type: ignore[arg-type]
            resource_server_url=resource,  # type: ignore[arg-type]
            required_scopes=[SCOPE],
            validate_token_resource=True,
        ),
    )

    @server.tool(description="Say who the token belongs to.")
    def whoami(ctx: Context) -> str:
        return "a caller with a valid token"

    @server.tool(description="Ask the caller's name, then greet them.")
    async def greet(ctx: Context) -> str:
        result = await ctx.elicit("Who is calling?", Name)
        return f"Hello, {result.data.name}!" if result.action == "accept" else f"no name ({result.action})"

    return server


if __name__ == "__main__":
    build(int(sys.argv[1]), sys.argv[2]).run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
