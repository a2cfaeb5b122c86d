"""A server whose tools act on the person's GitHub account: ``ctx.authorize("github")``.

    export MCP_URL=https://mcp.example.com/mcp            # where clients reach this server
    export MCP_ISSUER=https://login.example.com           # its authorization server (OpenID)
    export MCP_SIGN_IN_CLIENT_ID=... MCP_SIGN_IN_CLIENT_SECRET=...   # this server, registered there
    export GITHUB_CLIENT_ID=... GITHUB_CLIENT_SECRET=...  # a GitHub OAuth app; its callback URL:
                                                          # $MCP_URL/ask/connect/callback
    export ELICITKIT_STATE_KEYS=...                       # 32 random bytes, base64url: seal the tokens
    python examples/connections/code_hub.py

Every request needs a bearer token from ``MCP_ISSUER`` (the resource server). The first time a
person calls ``my_repositories``, the server asks them (URL mode) to connect their GitHub
account: the link opens this server's own start page, which has them sign in at
``MCP_ISSUER`` (so only they can use it), shows which account is being connected, then sends
them to GitHub (authorization code + PKCE). The token is kept sealed under
``ELICITKIT_STATE_KEYS`` beside the server's tasks, and the next calls use it without asking.
GitHub publishes no OpenID metadata: its endpoints are given explicitly.
"""

from __future__ import annotations

import json
import os
import urllib.request

import anyio.to_thread

from elicitkit import Context, Server
from elicitkit.server.auth import JWTVerifier, ResourceServer
from elicitkit.server.auth.connections import Connections, Provider

GITHUB_API = "https://api.github.com"


def github(client_id: str, client_secret: str, *, web: str = "https://github.com") -> Provider:
    """GitHub as a provider: no metadata, so the endpoints by hand (GitHub sends no ``iss``)."""
    return Provider(
        "github",
        title="GitHub",
        client_id=client_id,
        client_secret=client_secret,
        authorization_endpoint=f"{web}/login/oauth/authorize",
        token_endpoint=f"{web}/login/oauth/access_token",
        scopes=["read:user", "repo"],
    )


def build(url: str, issuer: str, sign_in: Provider | None, provider: Provider, api: str = GITHUB_API) -> Server:
    server = Server(
        "code-hub",
        title="Code Hub",
        auth=ResourceServer(JWTVerifier(issuer, url), resource=url, authorization_servers=[issuer]),
        connections=Connections([provider], sign_in=sign_in),
    )

    def get(path: str, token: str) -> object:
        request = urllib.request.Request(
            api + path, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.loads(reply.read())

    @server.tool()
    async def my_repositories(ctx: Context) -> str:
        """The repositories of the person's GitHub account (they connect it the first time)."""
        token = await ctx.authorize("github", message="Connect your GitHub account to list your repositories.")
        repos = await anyio.to_thread.run_sync(get, "/user/repos", token)
        names = [str(r.get("full_name")) for r in repos if isinstance(r, dict)] if isinstance(repos, list) else []
        return "\n".join(names) or "no repositories"

    return server


def main() -> None:
    env = os.environ
    url, issuer = env["MCP_URL"], env["MCP_ISSUER"]
    sign_in = Provider(
        "self", issuer=issuer, client_id=env["MCP_SIGN_IN_CLIENT_ID"], client_secret=env["MCP_SIGN_IN_CLIENT_SECRET"]
    )
    server = build(url, issuer, sign_in, github(env["GITHUB_CLIENT_ID"], env["GITHUB_CLIENT_SECRET"]))
    server.configure_pages(public_url=url)  # the start page and the callback are reached at this address
    server.run("http", host="0.0.0.0", port=int(env.get("PORT", "8000")))


if __name__ == "__main__":
    main()
