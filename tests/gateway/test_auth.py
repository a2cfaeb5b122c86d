"""The gateway's OAuth, against a real authorization server (npm oidc-provider).

The front door is a resource server for the gateway's own URL: no token, or a token for another
audience, is a 401 naming the metadata; a good token calls through. Behind it, a protected HTTP
backend takes only tokens for *its* URL, which the gateway gets with its own client
(client credentials): the host's token never goes there. Each principal gets backend connections
of its own, and no token or secret reaches the logs.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest

from elicitkit import AcceptedElicitation, Client, Context, ElicitationResult, Server
from elicitkit.auth import StaticToken
from elicitkit.gateway import Gateway, parse_config
from elicitkit.protocol.errors import MCPError
from elicitkit.server.auth import JWTVerifier, ResourceServer
from elicitkit.transports.http.serve import serve_http_background
from kit.oidc import AuthorizationServer, authorization_server
from kit.processes import free_port
from kit.raw import ACCEPT, headers_for, meta

from .auth_support import HOST_SECRET, Recording, Seats, machine, token_for

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

GATEWAY_SECRET = "gateway-secret-that-is-long-enough-for-hs256"
MACHINES = ("gateway", "host-a", "host-b")


@pytest.fixture(scope="module")
def provider() -> Iterator[AuthorizationServer]:
    clients = [machine("gateway", GATEWAY_SECRET), machine("host-a", HOST_SECRET), machine("host-b", HOST_SECRET)]
    with authorization_server(clients=clients) as server:
        yield server


def protected_backend(provider: AuthorizationServer, url: str) -> tuple[Server, Recording]:
    verifier = Recording(JWTVerifier(provider.issuer, url))
    server = Server("tickets")
    server.auth = ResourceServer(verifier, resource=url, authorization_servers=[provider.issuer], scopes=["mcp:tools"])

    @server.tool()
    async def book(ctx: Context) -> str:
        """Ask how many seats, and say who the backend's token was for."""
        answer = await ctx.elicit("How many seats?", Seats)
        seats = answer.data.seats if isinstance(answer, AcceptedElicitation) else 0
        return f"{seats} seats, booked by {ctx.principal}"

    return server, verifier


async def person(request: Any) -> ElicitationResult[Any]:
    return ElicitationResult.accept({"seats": 2})


@dataclass
class Setup:
    gateway: Gateway
    url: str
    backend_url: str
    backend_tokens: Recording


@asynccontextmanager
async def running(provider: AuthorizationServer, secret_env: str = "GW_TEST_BACKEND_SECRET") -> AsyncIterator[Setup]:
    backend_port, gateway_port = free_port(), free_port()
    backend_url = f"http://127.0.0.1:{backend_port}/mcp"
    url = f"http://127.0.0.1:{gateway_port}/mcp"
    backend, seen = protected_backend(provider, backend_url)
    config = parse_config(
        {
            "gateway": {
                "name": "front",
                "auth": {"issuer": provider.issuer, "resource": url, "scopes": ["mcp:tools"]},
            },
            "backends": [
                {
                    "name": "tickets",
                    "url": backend_url,
                    "namespace": "tickets.",
                    "auth": {"type": "client_credentials", "client_id": "gateway", "client_secret_env": secret_env},
                }
            ],
        }
    )
    async with serve_http_background(backend, port=backend_port):
        gateway = Gateway(config)
        async with gateway.running(), serve_http_background(gateway, port=gateway_port):
            yield Setup(gateway, url, backend_url, seen)


async def test_the_front_door_is_a_resource_server_and_backends_get_their_own_tokens(
    provider: AuthorizationServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("GW_TEST_BACKEND_SECRET", GATEWAY_SECRET)
    caplog.set_level(logging.DEBUG)
    async with running(provider) as setup:
        url = setup.url
        async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
            bare = await http.post(url, json={})
            assert bare.status_code == 401
            challenge = bare.headers["www-authenticate"]
            assert 'resource_metadata="' in challenge and 'scope="mcp:tools"' in challenge
            metadata_url = challenge.split('resource_metadata="')[1].split('"')[0]
            metadata = (await http.get(metadata_url)).json()
            assert metadata["resource"] == url and metadata["authorization_servers"] == [provider.issuer]

            for_the_backend = await token_for(provider, "host-a", setup.backend_url)  # another audience
            refused = await http.post(url, json={}, headers={"Authorization": f"Bearer {for_the_backend}"})
            assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]
            assert for_the_backend not in refused.text + refused.headers["www-authenticate"]

        host_token = await token_for(provider, "host-a", url)
        for mode in ("legacy", "modern"):
            async with Client(url, mode=mode, auth=StaticToken(host_token), elicitation_callback=person) as host:
                assert "tickets.book" in [tool.name for tool in (await host.list_tools()).tools]
                result = await host.call_tool("tickets.book", {})
            # the backend's principal is the gateway's own client: its token, not the host's
            assert result.text == "2 seats, booked by gateway", result.text
        assert host_token not in setup.backend_tokens.seen
        backend_tokens = set(setup.backend_tokens.seen)
        assert backend_tokens  # the backend saw the gateway's token(s)
    logged = caplog.text
    for secret in (host_token, for_the_backend, GATEWAY_SECRET, HOST_SECRET, *backend_tokens):
        assert secret not in logged
    assert "refused a bearer token" in logged  # the wrong-audience 401 was logged, in words


async def test_each_principal_gets_backend_connections_of_its_own(
    provider: AuthorizationServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GW_TEST_BACKEND_SECRET", GATEWAY_SECRET)
    async with running(provider) as setup:
        backend = setup.gateway.backends["tickets"]
        tokens = {who: await token_for(provider, who, setup.url) for who in ("host-a", "host-b")}

        async def book(who: str) -> str:
            auth = StaticToken(tokens[who])
            async with Client(setup.url, auth=auth, elicitation_callback=person) as host:
                return (await host.call_tool("tickets.book", {})).text

        before = backend.opened
        assert await book("host-a") == "2 seats, booked by gateway"
        assert backend.opened == before + 1
        assert await book("host-b") == "2 seats, booked by gateway"
        assert backend.opened == before + 2  # host-a's idle connection is not lent to host-b
        assert await book("host-a") == "2 seats, booked by gateway"
        assert backend.opened == before + 2  # host-a's own is reused
        assert {lease.principal for lease in backend._idle} >= {"host-a", "host-b"}


async def test_a_refused_gateway_client_names_the_backend_without_the_secret(
    provider: AuthorizationServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "not-the-gateway-secret-but-long-enough-to-look-real"
    monkeypatch.setenv("GW_TEST_BACKEND_SECRET", wrong)
    caplog.set_level(logging.DEBUG)
    async with running(provider) as setup:
        backend = setup.gateway.backends["tickets"]
        host_token = await token_for(provider, "host-a", setup.url)
        async with Client(setup.url, auth=StaticToken(host_token), elicitation_callback=person) as host:
            assert [tool.name for tool in (await host.list_tools()).tools] == []  # left out, not fatal
            with pytest.raises(MCPError) as caught:
                await host.call_tool("tickets.book", {})
        assert "tickets.book" in caught.value.message
        assert backend.last_error is not None and "invalid_client" in backend.last_error, backend.last_error
    assert wrong not in caplog.text and wrong not in (backend.last_error or "")


async def test_a_parked_call_is_its_principals_only(
    provider: AuthorizationServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2026 host's round parks the backend call; the round's state replayed under another
    principal's token is refused, and the call it parked still answers its own principal."""
    monkeypatch.setenv("GW_TEST_BACKEND_SECRET", GATEWAY_SECRET)
    async with running(provider) as setup, httpx.AsyncClient(trust_env=False, timeout=20) as http:
        ada, eve = [await token_for(provider, who, setup.url) for who in ("host-a", "host-b")]

        async def call(token: str, params: dict[str, Any]) -> dict[str, Any]:
            params = {**params, "_meta": meta(caps={"elicitation": {"form": {}}})}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            headers = {"Accept": ACCEPT, "Content-Type": "application/json", **headers_for("tools/call", params)}
            answer = await http.post(
                setup.url, content=orjson.dumps(body), headers={**headers, "Authorization": f"Bearer {token}"}
            )
            assert answer.status_code in (200, 400), answer.text  # (400: a JSON-RPC error for the request)
            reply: dict[str, Any] = answer.json()
            return reply

        asked = (await call(ada, {"name": "tickets.book", "arguments": {}}))["result"]
        state, (key,) = asked["requestState"], asked["inputRequests"]
        assert len(setup.gateway.parked) == 1  # the backend call waits for ada's answer
        retry = {
            "name": "tickets.book",
            "arguments": {},
            "requestState": state,
            "inputResponses": {key: {"action": "accept", "content": {"seats": 5}}},
        }
        stolen = await call(eve, retry)
        assert stolen["error"]["code"] == -32602 and "requestState" in stolen["error"]["message"], stolen
        assert len(setup.gateway.parked) == 1  # still there, untouched
        done = (await call(ada, retry))["result"]
        assert done["content"][0]["text"] == "5 seats, booked by gateway", done
        assert len(setup.gateway.parked) == 0
