"""The resource server against a real authorization server (npm oidc-provider) and real clients.

Our ``Client(url, auth=OAuth(...))`` and the official ``mcp`` client with its
``OAuthClientProvider`` each find the metadata from the 401, register, sign the person in
(headless Chromium), get a JWT for this resource and call a tool that asks a question; the
tool sees the verified subject as ``ctx.principal``.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.to_thread
import httpx
import pytest

from elicitkit import AcceptedElicitation, Client, Context, ElicitationResult, Server
from elicitkit.auth import MemoryTokenStore, OAuth
from elicitkit.server.auth import JWTVerifier, ResourceServer
from elicitkit.transports.http.serve import serve_http_background
from kit.oidc import AuthorizationServer, authorization_server
from kit.oidc.consent import ChromiumAuthorizer, chromium, sign_in_and_consent
from kit.processes import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def provider() -> Iterator[AuthorizationServer]:
    with authorization_server() as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def build(provider: AuthorizationServer, url: str) -> Server:
    server = Server("protected-by-oidc-provider")
    server.auth = ResourceServer(
        JWTVerifier(provider.issuer, url),
        resource=url,
        authorization_servers=[provider.issuer],
        scopes=["mcp:tools"],
        resource_name="elicitkit test server",
    )

    from pydantic import BaseModel

    class Name(BaseModel):
        name: str

    @server.tool()
    async def greet(ctx: Context) -> str:
        """Ask the person's name, then greet them, saying who the token was for."""
        answer = await ctx.elicit("Who is calling?", Name)
        name = answer.data.name if isinstance(answer, AcceptedElicitation) else "nobody"
        return f"Hello, {name}! (signed in as {ctx.principal})"

    return server


@asynccontextmanager
async def protected(provider: AuthorizationServer) -> AsyncIterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    async with serve_http_background(build(provider, url), port=port):
        yield url


async def person(request: Any) -> ElicitationResult[Any]:
    return ElicitationResult.accept({"name": "Ada"})


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_our_client_signs_in_and_answers_a_question(
    provider: AuthorizationServer, browser: Any, mode: Any
) -> None:
    async with protected(provider) as url:
        async with httpx.AsyncClient(trust_env=False) as http:
            refused = await http.post(url, json={})
            assert refused.status_code == 401 and "resource_metadata=" in refused.headers["www-authenticate"]
        authorizer = ChromiumAuthorizer(browser, login="ada")
        oauth = OAuth(store=MemoryTokenStore(), authorizer=authorizer)
        async with Client(url, mode=mode, auth=oauth, elicitation_callback=person) as client:
            result = await client.call_tool("greet", {})
        assert result.text.startswith("Hello, Ada! (signed in as ada via ")
        assert len(authorizer.opened) == 1


class _Callback:
    """A loopback redirect target for the official client: it keeps the query, shows a heading."""

    def __init__(self) -> None:
        self.queries: list[dict[str, str]] = []
        self.arrived = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                if urlsplit(self.path).path == "/callback":  # not the browser's /favicon.ico
                    outer.queries.append({k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()})
                    outer.arrived.set()
                body = b"<h1>Signed in</h1>"
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def test_the_official_mcp_client_signs_in_and_answers_a_question(browser: Any) -> None:
    """Pre-registered: the official client registers with the challenge's scope (``mcp:tools``),
    which oidc-provider refuses in client metadata (it accepts only its OIDC scopes there)."""
    httpx2 = pytest.importorskip("httpx2")
    import mcp
    from mcp import types as mcp_types
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

    class Storage:
        def __init__(self) -> None:
            self.tokens: OAuthToken | None = None
            self.client: OAuthClientInformationFull | None = None

        async def get_tokens(self) -> OAuthToken | None:
            return self.tokens

        async def set_tokens(self, tokens: OAuthToken) -> None:
            self.tokens = tokens

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return self.client

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
            self.client = client_info

    callback = _Callback()
    headings: list[str] = []

    async def redirect(authorization_url: str) -> None:
        heading = await anyio.to_thread.run_sync(
            lambda: sign_in_and_consent(browser, authorization_url, login="grace", redirect_prefix=callback.url)
        )
        headings.append(heading)

    async def on_callback() -> AuthorizationCodeResult:
        await anyio.to_thread.run_sync(callback.arrived.wait, 30)
        query = callback.queries[-1]
        assert "code" in query, query  # an error from the provider: say which
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    async def on_elicit(context: Any, params: Any) -> Any:
        return mcp_types.ElicitResult(action="accept", content={"name": "Grace"})

    storage = Storage()
    registered = {
        "client_id": "official",
        "redirect_uris": [callback.url],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    }
    storage.client = OAuthClientInformationFull.model_validate(registered)
    try:
        with authorization_server(clients=[registered]) as provider:
            async with protected(provider) as url:
                auth = OAuthClientProvider(
                    url,
                    OAuthClientMetadata(
                        client_name="official mcp client",
                        redirect_uris=[callback.url],  # type: ignore[list-item]
                        grant_types=["authorization_code", "refresh_token"],
                        response_types=["code"],
                        token_endpoint_auth_method="none",
                    ),
                    storage,
                    redirect_handler=redirect,
                    callback_handler=on_callback,
                )
                async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30.0, read=120.0)) as http:
                    transport = streamable_http_client(url, http_client=http)
                    with anyio.fail_after(120):
                        async with mcp.Client(transport, mode="legacy", elicitation_callback=on_elicit) as client:
                            result = await client.call_tool("greet", {})
                block = result.content[0]
                assert isinstance(block, mcp_types.TextContent)
                assert block.text.startswith("Hello, Grace! (signed in as grace via ")
                assert headings == ["Signed in"]
                assert storage.tokens is not None and storage.tokens.access_token.count(".") == 2
    finally:
        callback.close()
