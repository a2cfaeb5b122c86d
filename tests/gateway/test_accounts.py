"""A backend each person signs in to with their own account, behind a protected gateway.

One oidc-provider is both the gateway's authorization server (hosts' tokens for the gateway's
URL, client credentials) and the backend's (people's tokens for the backend's URL). Nobody has
signed in at first, so the gateway shows ``tickets.sign_in``; calling it sends the person
(headless Chromium) through a URL question to the gateway's start page, the provider's login,
and back; the backend's tools then appear, and a call goes with that person's token. A second
principal calling the backend's tool is asked to sign in with their own account first (on
2026-07-28, in the round), and their call goes with their token, not the first person's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from elicitkit import AcceptedElicitation, Client, Context, ElicitationResult, Server
from elicitkit.auth import StaticToken
from elicitkit.elicitation.requests import ElicitRequest, FormRequest, UrlRequest
from elicitkit.gateway import Gateway, parse_config
from elicitkit.server.auth import JWTVerifier, ResourceServer
from elicitkit.server.tasks.store import InMemoryTaskStore
from elicitkit.transports.http.serve import serve_http_background
from kit.oidc import authorization_server
from kit.oidc.consent import chromium, connect_in_browser, forget_sign_ins
from kit.processes import free_port

from .auth_support import HOST_SECRET, Recording, Seats, machine, token_for

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

CONNECT_SECRET = "connect-secret-that-is-long-enough-for-hs256"


def person(driver: Any, issuer: str, login: str, asked: list[ElicitRequest], seen: list[dict[str, str]]) -> Any:
    """The host's person: signs in at the provider (as ``login``) when sent there, books 2 seats."""

    async def callback(request: ElicitRequest) -> ElicitationResult[Any]:
        asked.append(request)
        if isinstance(request, UrlRequest):
            logins = {issuer: login}
            seen.append(await anyio.to_thread.run_sync(lambda: connect_in_browser(driver, request.url, logins)))
            return ElicitationResult.accept()
        assert isinstance(request, FormRequest)
        return ElicitationResult.accept({"seats": 2})

    return callback


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


async def test_each_person_signs_in_to_the_backend_with_their_own_account(
    browser: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    backend_port, gateway_port = free_port(), free_port()
    backend_url = f"http://127.0.0.1:{backend_port}/mcp"
    url = f"http://127.0.0.1:{gateway_port}/mcp"
    connect_client = {
        "client_id": "gw-connect",
        "client_secret": CONNECT_SECRET,
        "redirect_uris": [f"{url}/ask/connect/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic",
    }
    monkeypatch.setenv("GW_TEST_CONNECT_SECRET", CONNECT_SECRET)
    caplog.set_level(logging.DEBUG)
    clients = [machine("host-a"), machine("host-b"), connect_client]
    with authorization_server(clients=clients, auto_consent=True) as provider:
        verifier = Recording(JWTVerifier(provider.issuer, backend_url))
        backend = Server("tickets")
        backend.auth = ResourceServer(
            verifier, resource=backend_url, authorization_servers=[provider.issuer], scopes=["mcp:tools"]
        )

        @backend.tool()
        async def book(ctx: Context) -> str:
            """Ask how many seats; say whose token the backend got."""
            answer = await ctx.elicit("How many seats?", Seats)
            seats = answer.data.seats if isinstance(answer, AcceptedElicitation) else 0
            return f"{seats} seats, booked by {ctx.principal}"

        config = parse_config(
            {
                "gateway": {"auth": {"issuer": provider.issuer, "resource": url, "scopes": ["mcp:tools"]}},
                "backends": [
                    {
                        "name": "tickets",
                        "url": backend_url,
                        "namespace": "tickets.",
                        "auth": {
                            "type": "connect",
                            "issuer": provider.issuer,
                            "client_id": "gw-connect",
                            "client_secret_env": "GW_TEST_CONNECT_SECRET",
                            "scopes": ["mcp:tools"],
                        },
                    }
                ],
            }
        )
        gateway = Gateway(config, task_store=InMemoryTaskStore())
        async with (
            serve_http_background(backend, port=backend_port),
            gateway.running(),
            serve_http_background(gateway, port=gateway_port),
        ):
            host_tokens = [await token_for(provider, who, url) for who in ("host-a", "host-b")]
            asked: list[ElicitRequest] = []
            seen: list[dict[str, str]] = []
            ada = person(browser, provider.issuer, "ada", asked, seen)
            async with Client(url, auth=StaticToken(host_tokens[0]), elicitation_callback=ada) as host:
                names = [tool.name for tool in (await host.list_tools()).tools]
                assert names == ["tickets.sign_in"]  # nobody has signed in: the backend cannot be listed
                signed = await host.call_tool("tickets.sign_in", {})
                assert not signed.is_error and "its tools are listed now" in signed.text, signed.text
                assert isinstance(asked[0], UrlRequest) and "/mcp/ask/connect/start?link=" in asked[0].url
                assert seen[0]["end"] == "connected", seen
                names = [tool.name for tool in (await host.list_tools()).tools]
                assert names == ["tickets.book"]
                booked = await host.call_tool("tickets.book", {})
                assert booked.text.startswith("2 seats, booked by ada"), booked.text
                assert len([a for a in asked if isinstance(a, UrlRequest)]) == 1  # kept: not asked again

            forget_sign_ins(browser)  # another person's browser
            asked_b: list[ElicitRequest] = []
            seen_b: list[dict[str, str]] = []
            bob = person(browser, provider.issuer, "bob", asked_b, seen_b)
            auth_b = StaticToken(host_tokens[1])
            async with Client(url, mode="modern", auth=auth_b, elicitation_callback=bob) as host:
                booked = await host.call_tool("tickets.book", {})
                assert booked.text.startswith("2 seats, booked by bob"), booked.text
                assert isinstance(asked_b[0], UrlRequest) and seen_b[0]["end"] == "connected", seen_b
            assert gateway.connections is not None
            assert {c.provider for c in await gateway.connections.list()} == {"tickets"}
            assert len(await gateway.connections.list()) == 2  # one per principal
        backend_tokens = set(verifier.seen)
    assert len(backend_tokens) >= 2 and not backend_tokens & set(host_tokens)
    logged = caplog.text
    for secret in (*host_tokens, *backend_tokens, CONNECT_SECRET, HOST_SECRET):
        assert secret not in logged
