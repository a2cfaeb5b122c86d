"""``Client(url, auth=OAuth(...))`` against a real authorization server: oidc-provider, Chromium consent.

The protected elicitkit server (``protected_server.py``) takes only oidc-provider's JWTs. The
first connection signs in (discovery, dynamic registration, PKCE, consent in headless
Chromium through the loopback redirect); a second OAuth with the same file store connects with
the kept token and no browser; once the token nears its end, the next request refreshes it
(rotated) without a browser. Two servers behind the one provider share one registered client
(each sign-in's loopback port differs), and each kept token refreshes as the client it was
issued to.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import pytest

from elicitkit import Client
from elicitkit.auth import FileTokenStore, OAuth, token_key
from kit.oidc import AuthorizationServer, authorization_server
from kit.oidc.consent import ChromiumAuthorizer, chromium
from kit.processes import serve_on_free_port

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

PROTECTED = Path(__file__).with_name("protected_server.py")
ACCESS_TTL = 75  # seconds; the client renews 60 s before expiry, so the token is fresh for ~15 s


@pytest.fixture(scope="module")
def provider() -> Iterator[AuthorizationServer]:
    with authorization_server(access_ttl=ACCESS_TTL) as server:
        yield server


def _serve(provider: AuthorizationServer) -> Iterator[str]:
    argv = lambda port: [sys.executable, str(PROTECTED), str(port), provider.issuer]  # noqa: E731
    with serve_on_free_port(argv, "protected_server.py") as (port, _proc, _log):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def protected(provider: AuthorizationServer) -> Iterator[str]:
    yield from _serve(provider)


@pytest.fixture(scope="module")
def protected_too(provider: AuthorizationServer) -> Iterator[str]:
    """A second protected server behind the same authorization server."""
    yield from _serve(provider)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url.removesuffix("/mcp") + "/_stats", timeout=5) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data


async def test_sign_in_then_reuse_then_refresh(
    provider: AuthorizationServer, protected: str, browser: Any, tmp_path: Path
) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    first = ChromiumAuthorizer(browser)
    async with Client(protected, auth=OAuth(store=store, authorizer=first)) as client:
        result = await client.call_tool("whoami", {})
        assert result.content[0].text == "a protected server"  # type: ignore[union-attr]
    assert len(first.opened) == 1 and first.headings == ["Signed in"]
    (key,) = [k for k in await store.keys() if k.startswith("tokens ")]
    assert key == token_key(protected, provider.issuer)
    kept = await store.load(key)
    assert kept is not None and kept["refresh_token"] and kept["issuer"] == provider.issuer

    # a new program with the same store: the kept token, no browser
    second = ChromiumAuthorizer(browser)
    async with Client(protected, auth=OAuth(store=store, authorizer=second)) as client:
        await client.call_tool("whoami", {})
    assert second.opened == []
    assert (await store.load(key)) == kept

    # the token nears its end: the next program refreshes it, still no browser
    await anyio.sleep(max(0.0, kept["expires_at"] - 60 - time.time() + 1))
    third = ChromiumAuthorizer(browser)
    async with Client(protected, auth=OAuth(store=store, authorizer=third)) as client:
        await client.call_tool("whoami", {})
    assert third.opened == []
    renewed = await store.load(key)
    assert renewed is not None
    assert renewed["access_token"] != kept["access_token"]
    assert renewed["refresh_token"] != kept["refresh_token"]  # rotated
    seen = stats(protected)["seen"]
    assert seen["ok"] >= 3 and seen.get("invalid", 0) == 0


async def test_two_servers_share_one_client_and_each_token_refreshes_as_its_own(
    provider: AuthorizationServer, protected: str, protected_too: str, browser: Any, tmp_path: Path
) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    first, second = ChromiumAuthorizer(browser), ChromiumAuthorizer(browser)
    async with Client(protected, auth=OAuth(store=store, authorizer=first)) as client:
        await client.call_tool("whoami", {})
    async with Client(protected_too, auth=OAuth(store=store, authorizer=second)) as client:
        await client.call_tool("whoami", {})
    assert len(first.opened) == len(second.opened) == 1
    asked = [dict(parse_qsl(urlsplit(url).query)) for url in (*first.opened, *second.opened)]
    # each sign-in had its own loopback port; the one registration served both (oidc-provider
    # accepts a native client's loopback redirect on any port, RFC 8252 section 7.3)
    assert asked[0]["client_id"] == asked[1]["client_id"]

    # the first server's token has expired, as far as the client knows: a new program refreshes
    # it as the client it was issued to, with no browser
    key = token_key(protected, provider.issuer)
    kept = await store.load(key)
    assert kept is not None and kept["client"]["client_id"] == asked[0]["client_id"]
    await store.save(key, {**kept, "expires_at": time.time() - 1})
    third = ChromiumAuthorizer(browser)
    async with Client(protected, auth=OAuth(store=store, authorizer=third)) as client:
        await client.call_tool("whoami", {})
    assert third.opened == []
    renewed = await store.load(key)
    assert renewed is not None and renewed["refresh_token"] != kept["refresh_token"]
