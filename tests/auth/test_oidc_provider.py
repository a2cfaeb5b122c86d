"""The tests' authorization server and resource gate, proven by hand: no elicitkit OAuth flow involved.

A PKCE authorization code flow written out step by step against the real oidc-provider
(dynamic registration, resource indicator, consent in headless Chromium through the
LoopbackAuthorizer), then the JWT access token at the protected test server, and a rotated
refresh. If this fails, the fixture is broken, not the client under test.
"""

from __future__ import annotations

import base64
import hashlib
import io
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio.to_thread
import httpx
import pytest

from elicitkit.auth import LoopbackAuthorizer
from kit.oidc import AuthorizationServer, authorization_server
from kit.oidc.consent import chromium, sign_in_and_consent
from kit.processes import serve_on_free_port

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

PROTECTED = Path(__file__).with_name("protected_server.py")


@pytest.fixture(scope="module")
def provider() -> Iterator[AuthorizationServer]:
    with authorization_server(access_ttl=600) as server:
        yield server


@pytest.fixture(scope="module")
def protected(provider: AuthorizationServer) -> Iterator[str]:
    argv = lambda port: [sys.executable, str(PROTECTED), str(port), provider.issuer]  # noqa: E731
    with serve_on_free_port(argv, "protected_server.py") as (port, _proc, _log):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_the_gate_challenges_with_its_metadata(provider: AuthorizationServer, protected: str) -> None:
    async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
        refused = await http.post(protected, json=INITIALIZE, headers=MCP_HEADERS)
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith("Bearer ") and 'scope="mcp:tools"' in challenge
        origin = protected.removesuffix("/mcp")
        assert f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"' in challenge
        metadata = (await http.get(f"{origin}/.well-known/oauth-protected-resource/mcp")).json()
        assert metadata["resource"] == protected
        assert metadata["authorization_servers"] == [provider.issuer]
        root = (await http.get(f"{origin}/.well-known/oauth-protected-resource")).json()
        assert root == metadata
        forged = await http.post(protected, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer x.y.z"})
        assert forged.status_code == 401 and 'error="invalid_token"' in forged.headers["www-authenticate"]


async def test_a_code_flow_by_hand_gets_a_jwt_the_gate_takes(
    provider: AuthorizationServer, protected: str, browser: Any
) -> None:
    meta = provider.metadata
    assert meta["authorization_response_iss_parameter_supported"] is True
    assert "S256" in meta["code_challenge_methods_supported"]
    async with (
        httpx.AsyncClient(trust_env=False, timeout=10) as http,
        LoopbackAuthorizer(open_browser=False, print_to=io.StringIO()) as authorizer,
    ):
        registered = await http.post(
            meta["registration_endpoint"],
            json={
                "client_name": "by hand",
                "redirect_uris": [authorizer.redirect_uri],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
                "application_type": "native",
            },
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        verifier, challenge = pkce()
        state = secrets.token_urlsafe(16)
        url = (
            meta["authorization_endpoint"]
            + "?"
            + urlencode(
                {
                    "response_type": "code",
                    "client_id": client_id,
                    "redirect_uri": authorizer.redirect_uri,
                    "scope": "mcp:tools",
                    "resource": protected,
                    "state": state,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                }
            )
        )
        headings: list[str] = []

        async def person() -> None:
            headings.append(
                await anyio.to_thread.run_sync(
                    lambda: sign_in_and_consent(browser, url, redirect_prefix=authorizer.redirect_uri)
                )
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(person)
            params = await authorizer.authorize(url)
        assert headings == ["Signed in"]
        assert params["state"] == state and params["iss"] == provider.issuer and "error" not in params
        token = await http.post(
            meta["token_endpoint"],
            data={
                "grant_type": "authorization_code",
                "code": params["code"],
                "redirect_uri": authorizer.redirect_uri,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": protected,
            },
        )
        assert token.status_code == 200, token.text
        tokens = token.json()
        assert tokens["token_type"].lower() == "bearer" and tokens["access_token"].count(".") == 2
        assert tokens.get("refresh_token")

        bearer = {**MCP_HEADERS, "Authorization": f"Bearer {tokens['access_token']}"}
        served = await http.post(protected, json=INITIALIZE, headers=bearer)
        assert served.status_code == 200, served.text
        assert "serverInfo" in served.text

        refreshed = await http.post(
            meta["token_endpoint"],
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": client_id,
                "resource": protected,
            },
        )
        assert refreshed.status_code == 200, refreshed.text
        assert refreshed.json()["refresh_token"] != tokens["refresh_token"]  # rotated
        reused = await http.post(
            meta["token_endpoint"],
            data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id},
        )
        assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
        stats = (await http.get(protected.removesuffix("/mcp") + "/_stats")).json()
        assert stats["seen"]["ok"] >= 1 and stats["subjects"][-1] == "ada"


async def test_pre_registered_clients_get_client_credentials_tokens_for_a_resource(protected: str) -> None:
    client = {
        "client_id": "machine",
        "client_secret": "machine-secret-that-is-long-enough-for-hs256",
        "grant_types": ["client_credentials"],
        "redirect_uris": [],
        "response_types": [],
    }
    with authorization_server(clients=[client], access_ttl=120) as server:
        async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
            token = await http.post(
                server.metadata["token_endpoint"],
                data={"grant_type": "client_credentials", "resource": protected, "scope": "mcp:tools"},
                auth=("machine", client["client_secret"]),
            )
            assert token.status_code == 200, token.text
            body = token.json()
            assert body["expires_in"] <= 120 and body["access_token"].count(".") == 2
            bearer = {**MCP_HEADERS, "Authorization": f"Bearer {body['access_token']}"}
            served = await http.post(protected, json=INITIALIZE, headers=bearer)
            assert served.status_code == 401  # the gate trusts its own issuer only, not this second server


async def test_auto_consent_skips_the_consent_page(browser: Any) -> None:
    with authorization_server(auto_consent=True) as server:
        meta = server.metadata
        async with (
            httpx.AsyncClient(trust_env=False, timeout=10) as http,
            LoopbackAuthorizer(open_browser=False, print_to=io.StringIO()) as authorizer,
        ):
            registered = await http.post(
                meta["registration_endpoint"],
                json={
                    "redirect_uris": [authorizer.redirect_uri],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "token_endpoint_auth_method": "none",
                    "application_type": "native",
                },
            )
            _, challenge = pkce()
            query = {
                "response_type": "code",
                "client_id": registered.json()["client_id"],
                "redirect_uri": authorizer.redirect_uri,
                "scope": "mcp:tools",
                "resource": "http://127.0.0.1:9/mcp",
                "state": "s",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
            url = meta["authorization_endpoint"] + "?" + urlencode(query)
            seen: list[str] = []
            browser.delete_all_cookies()  # a fresh person: the login page comes first

            def person() -> str:
                return sign_in_and_consent(browser, url, redirect_prefix=authorizer.redirect_uri, seen=seen)

            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, person)
                params = await authorizer.authorize(url)
        assert "code" in params and params["state"] == "s"
        assert seen == ["login"]
