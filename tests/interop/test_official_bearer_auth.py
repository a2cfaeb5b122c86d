"""Our OAuth client against the official ``mcp`` SDK's bearer auth (a resource server written with it).

``peers/official_protected_server.py`` is an ``MCPServer`` with ``AuthSettings`` and a token
verifier for oidc-provider's JWTs: the SDK serves the protected resource metadata and the 401
challenge. Our ``Client(url, auth=OAuth(...))`` must find its way from that 401 to oidc-provider,
sign in (Chromium as the person), and then call tools, a question included, on both eras the
SDK serves; a client without a token, or with a forged one, is refused.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from elicitkit import Client
from elicitkit.auth import FileTokenStore, OAuth, StaticToken
from elicitkit.client.connect import ServerUnreachable
from elicitkit.elicitation.requests import FormRequest, UrlRequest
from elicitkit.errors import ElicitkitError
from kit.oidc import AuthorizationServer, authorization_server
from kit.oidc.consent import ChromiumAuthorizer, chromium
from kit.processes import serve_on_free_port

from .support import PEERS

pytestmark = [
    pytest.mark.interop,
    pytest.mark.anyio,
    pytest.mark.timeout(90),
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
]

PEER = PEERS / "official_protected_server.py"


@pytest.fixture(scope="module")
def provider() -> Iterator[AuthorizationServer]:
    with authorization_server() as server:
        yield server


@pytest.fixture(scope="module")
def official(provider: AuthorizationServer) -> Iterator[str]:
    argv = lambda port: [sys.executable, str(PEER), str(port), provider.issuer]  # noqa: E731
    with serve_on_free_port(argv, PEER.name) as (port, _proc, _log):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


async def name_ada(request: FormRequest | UrlRequest) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


async def test_our_oauth_client_reaches_the_official_bearer_auth(
    official: str, provider: AuthorizationServer, browser: Any, tmp_path: Path
) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    person = ChromiumAuthorizer(browser)
    async with Client(official, auth=OAuth(store=store, authorizer=person), elicitation_callback=name_ada) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"whoami", "greet"} <= tools
        greeted = await client.call_tool("greet", {})
        assert greeted.content[0].text == "Hello, Ada!"  # type: ignore[union-attr]
    assert len(person.opened) == 1 and person.headings == ["Signed in"]

    # the other era, a new program, the kept token: no browser
    again = ChromiumAuthorizer(browser)
    async with Client(official, mode="auto", auth=OAuth(store=store, authorizer=again)) as client:
        result = await client.call_tool("whoami", {})
        assert result.content[0].text == "a caller with a valid token"  # type: ignore[union-attr]
    assert again.opened == []


async def test_no_token_and_a_forged_token_are_refused(official: str) -> None:
    with pytest.raises((ServerUnreachable, ElicitkitError)) as refused:
        async with Client(official) as client:
            await client.list_tools()
    assert "401" in str(refused.value)
    with pytest.raises((ServerUnreachable, ElicitkitError)) as forged:
        async with Client(official, auth=StaticToken("eyJhbGciOiJub25lIn0.e30.")) as client:
            await client.list_tools()
    assert "401" in str(forged.value)
    assert "eyJhbGciOiJub25lIn0" not in str(forged.value)
