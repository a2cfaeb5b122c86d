"""``ctx.authorize`` end to end: two oidc-provider instances, headless Chromium, both eras.

The first oidc-provider is the MCP server's own authorization server (the client's bearer token
comes from it, and the start page has the browser's user sign in there); the second is the
third-party provider people connect an account at, once GitHub-style (explicit endpoints) and
once by issuer discovery. The person (Chromium) follows the start link, is recognised, sees
which account is being connected, signs in at the provider and consents; the tool gets a token
the provider's userinfo endpoint accepts. Also: the link opened by another signed-in user is
refused, a used link does not open again, the SQLite file and Redis hold no token in clear,
and a token is refreshed without asking the person again.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from elicitkit import Client, Context, ElicitationResult, Server
from elicitkit.auth import MemoryTokenStore, OAuth
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.server.auth import JWTVerifier, ResourceServer
from elicitkit.server.auth.connections import Connections, Provider
from elicitkit.server.tasks.store import SQLiteTaskStore
from elicitkit.transports.http.serve import serve_http_background
from kit.fleet import redis_server
from kit.oidc import AuthorizationServer, two_authorization_servers
from kit.oidc.consent import ChromiumAuthorizer, chromium, connect_in_browser, forget_sign_ins
from kit.processes import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

ERAS = [
    pytest.param({"mode": "legacy", "protocol_version": "2025-11-25"}, id="2025-11-25"),
    pytest.param({"mode": "modern", "protocol_version": "2026-07-28"}, id="2026-07-28"),
]
RP_SECRET = "rp-secret-for-the-tests-only-0123456789"
GH_SECRET = "gh-secret-for-the-tests-only-0123456789"


def client_entry(client_id: str, secret: str, redirect: str) -> dict[str, Any]:
    return {
        "client_id": client_id,
        "client_secret": secret,
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic",
    }


@dataclasses.dataclass
class World:
    own: AuthorizationServer  # the MCP server's authorization server
    third: AuthorizationServer  # the provider people connect at
    ports: tuple[int, int]  # the MCP server's port, and the Redis-backed one's
    driver: Any
    tokens: MemoryTokenStore  # the MCP client's tokens (Ada signs in to the MCP server once)

    def logins(self, at_own: str) -> dict[str, str]:
        return {self.own.issuer: at_own, self.third.issuer: f"{at_own}-at-the-provider"}


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    ports = (free_port(), free_port())
    callbacks = [f"http://127.0.0.1:{p}/mcp/ask/connect/callback" for p in ports]
    own_clients = [client_entry(f"mcp-server-{i}", RP_SECRET, cb) for i, cb in enumerate(callbacks)]
    third_clients = [client_entry(f"gh-app-{i}", GH_SECRET, cb) for i, cb in enumerate(callbacks)]
    with (
        two_authorization_servers(
            {"auto_consent": True, "clients": own_clients}, {"clients": third_clients, "access_ttl": 600}
        ) as (own, third),
        chromium() as driver,
    ):
        yield World(own, third, ports, driver, MemoryTokenStore())


def providers(world: World, index: int, sign_in: bool = True) -> Connections:
    meta = world.third.metadata
    github_style = Provider(  # no discovery: explicit endpoints, as for GitHub
        "gh",
        client_id=f"gh-app-{index}",
        client_secret=GH_SECRET,
        authorization_endpoint=meta["authorization_endpoint"],
        token_endpoint=meta["token_endpoint"],
        userinfo_endpoint=meta["userinfo_endpoint"],
        scopes=["openid"],
        title="Code Hub",
    )
    by_discovery = Provider(
        "bank", issuer=world.third.issuer, client_id=f"gh-app-{index}", client_secret=GH_SECRET, scopes=["openid"]
    )
    own = Provider("self", issuer=world.own.issuer, client_id=f"mcp-server-{index}", client_secret=RP_SECRET)
    return Connections([github_style, by_discovery], sign_in=own if sign_in else None)


def userinfo(world: World, token: str) -> str:
    request = urllib.request.Request(
        world.third.metadata["userinfo_endpoint"], headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return str(json.loads(reply.read())["sub"])


def build(world: World, index: int, url: str, sign_in: bool = True, **options: Any) -> Server:
    server = Server(
        "connector",
        title="Connector",
        auth=ResourceServer(
            JWTVerifier(world.own.issuer, url),
            resource=url,
            authorization_servers=[world.own.issuer],
            scopes=["mcp:tools"],
        ),
        connections=providers(world, index, sign_in),
        **options,
    )

    @server.tool()
    async def whoami_there(ctx: Context, provider: str = "gh") -> str:
        """Who this principal is at the provider: the token's subject, as the provider says."""
        token = await ctx.authorize(provider, timeout=60)
        sub = await anyio.to_thread.run_sync(userinfo, world, token)
        return f"{ctx.principal} is {sub} at {provider}"

    return server


@asynccontextmanager
async def served(
    world: World, tmp: Path, index: int = 0, sign_in: bool = True, **options: Any
) -> AsyncIterator[tuple[str, Server]]:
    port = world.ports[index]
    url = f"http://127.0.0.1:{port}/mcp"
    if "backplane" not in options:
        options["task_store"] = SQLiteTaskStore(tmp / "tasks.db")
    server = build(world, index, url, sign_in, **options)
    async with serve_http_background(server, port=port):
        yield url, server


def person(world: World, asked: list[UrlRequest], seen: list[dict[str, str]], as_who: str = "ada") -> Any:
    """The host: shows the URL, the person follows it in Chromium (signed in at the server's
    issuer as ``as_who``), then the host answers accept."""

    async def callback(request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, UrlRequest), request
        asked.append(request)
        logins = world.logins(as_who)
        seen.append(await anyio.to_thread.run_sync(lambda: connect_in_browser(world.driver, request.url, logins)))
        return ElicitationResult.accept()

    return callback


def ada(world: World) -> OAuth:
    """Ada's MCP client sign-in (Chromium, once per module: the tokens are kept)."""
    return OAuth(store=world.tokens, authorizer=ChromiumAuthorizer(world.driver, login="ada"))


@pytest.mark.parametrize("era", ERAS)
async def test_authorize_end_to_end_in_chromium(world: World, tmp_path: Path, era: dict[str, Any]) -> None:
    provider = "gh" if era["mode"] == "legacy" else "bank"
    asked: list[UrlRequest] = []
    seen: list[dict[str, str]] = []
    async with (
        served(world, tmp_path) as (url, server),
        Client(url, auth=ada(world), elicitation_callback=person(world, asked, seen), **era) as client,
    ):
        result = await client.call_tool("whoami_there", {"provider": provider})
        assert not result.is_error, result.text
        principal = result.text.split(" is ")[0]
        assert result.text == f"{principal} is ada-at-the-provider at {provider}"
        assert principal.startswith("ada")
        if era["mode"] == "legacy":  # the completion notice came for the URL question
            assert await client.wait_for_elicitation_complete(asked[0].elicitation_id or "", timeout=5)
        assert len(asked) == 1 and seen[0]["end"] == "connected", seen
        assert seen[0]["account"] == "ada"  # the confirm page named the account being connected
        assert "/mcp/ask/connect/start?link=" in asked[0].url
        # the token is kept: the next call does not ask
        again = await client.call_tool("whoami_there", {"provider": provider})
        assert again.text == result.text and len(asked) == 1
        # the start link was single-use: opened again, it is refused
        replay = await anyio.to_thread.run_sync(
            lambda: connect_in_browser(world.driver, asked[0].url, world.logins("ada"))
        )
        assert (replay["end"], replay["status"]) == ("error", "410") and "already" in replay["text"], replay
        # listed (never a token), and revocable per principal
        assert server.connections is not None
        listed = await server.connections.list(principal)
        assert [c.provider for c in listed] == [provider] and listed[0].renews
        assert await server.connections.revoke(principal, provider)
        assert await server.connections.list(principal) == []


async def test_the_start_link_opened_by_another_signed_in_user_is_refused(world: World, tmp_path: Path) -> None:
    asked: list[UrlRequest] = []
    seen: list[dict[str, str]] = []

    async def bob_opens_it(request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, UrlRequest)
        asked.append(request)
        forget_sign_ins(world.driver)  # another browser: Bob's, signed in at the server's issuer as bob
        logins = world.logins("bob")
        seen.append(await anyio.to_thread.run_sync(lambda: connect_in_browser(world.driver, request.url, logins)))
        forget_sign_ins(world.driver)
        return ElicitationResult.accept()

    async with (
        served(world, tmp_path) as (url, server),
        Client(url, auth=ada(world), elicitation_callback=bob_opens_it, protocol_version="2025-11-25") as client,
    ):
        result = await client.call_tool("whoami_there", {})
        assert server.connections is not None
        assert await server.connections.list() == []  # nothing was connected
    assert result.is_error and "another account" in result.text, result.text
    assert (seen[0]["end"], seen[0]["status"]) == ("error", "403"), seen
    assert "signed in as bob" in seen[0]["text"] and "another account" in seen[0]["text"]


def stored_bytes(folder: Path, pattern: str) -> bytes:
    """Every byte of the files ``pattern`` names in ``folder`` (the SQLite file and its WAL, an RDB)."""
    return b"".join(p.read_bytes() for p in sorted(folder.glob(pattern)))


def _no_token_in(blob: bytes, secrets_: list[str]) -> None:
    for secret in secrets_:
        assert secret.encode() not in blob, "a token is stored in clear"


async def test_sqlite_holds_no_token_in_clear_and_a_refresh_asks_nobody(world: World, tmp_path: Path) -> None:
    asked: list[UrlRequest] = []
    seen: list[dict[str, str]] = []
    async with (
        served(world, tmp_path) as (url, server),
        Client(
            url, auth=ada(world), elicitation_callback=person(world, asked, seen), protocol_version="2025-11-25"
        ) as client,
    ):
        first = await client.call_tool("whoami_there", {})
        assert not first.is_error, first.text
        connections = server.connections
        assert connections is not None
        principal = (await connections.list())[0].principal
        tokens = await connections.token(principal, "gh")
        assert tokens is not None and tokens.refresh_token is not None
        files = await anyio.to_thread.run_sync(stored_bytes, tmp_path, "tasks.db*")
        assert b"elicitkit_connections" in files  # the table is in the task store's file
        _no_token_in(files, [tokens.access_token, tokens.refresh_token])

        # near its end (here: a leeway longer than its life) the token is refreshed, nobody is asked
        gh = connections.providers["gh"]
        connections.providers["gh"] = dataclasses.replace(gh, refresh_leeway=10**6)
        try:
            second = await client.call_tool("whoami_there", {})
            renewed = await connections.token(principal, "gh")
        finally:
            connections.providers["gh"] = gh
        assert second.text == first.text and len(asked) == 1  # same account, no question
        assert renewed is not None and renewed.access_token != tokens.access_token
        assert renewed.refresh_token != tokens.refresh_token  # oidc-provider rotates it
        files = await anyio.to_thread.run_sync(stored_bytes, tmp_path, "tasks.db*")
        _no_token_in(files, [tokens.access_token, renewed.access_token, str(renewed.refresh_token)])
        await connections.revoke(principal, "gh")


async def test_redis_holds_no_token_in_clear(world: World, tmp_path: Path) -> None:
    from elicitkit.backplane.redis_backplane import RedisBackplane

    asked: list[UrlRequest] = []
    seen: list[dict[str, str]] = []
    with redis_server() as redis:
        backplane = RedisBackplane.from_url(redis.url, key="connections-test-fleet-key", prefix="conn-test:")
        async with (
            served(world, tmp_path, 1, backplane=backplane) as (url, server),
            Client(url, auth=ada(world), elicitation_callback=person(world, asked, seen), mode="modern") as client,
        ):
            result = await client.call_tool("whoami_there", {})
            assert not result.is_error, result.text
            connections = server.connections
            assert connections is not None
            principal = (await connections.list())[0].principal
            tokens = await connections.token(principal, "gh")
            assert tokens is not None and tokens.refresh_token is not None
            raw = backplane.redis().client
            keys = [k async for k in raw.scan_iter(match="conn-test:*")]
            assert any(b":conn:" in k for k in keys), keys  # kept in Redis, beside the tasks
            dump = b""
            for key in keys:
                kind = await raw.type(key)
                if kind == b"hash":
                    dump += b"".join(k + v for k, v in (await raw.hgetall(key)).items())
                elif kind == b"string":
                    dump += await raw.get(key) or b""
            await raw.save()  # and the RDB file on disk
            dump += await anyio.to_thread.run_sync(stored_bytes, Path(redis.directory), "*.rdb")
            _no_token_in(dump, [tokens.access_token, tokens.refresh_token])


async def test_the_connect_pages_pass_the_accessibility_audit(world: World, tmp_path: Path) -> None:
    browser = pytest.importorskip("client.handlers.browser.test_in_chromium", reason="the browser test helpers")
    audit = browser.Audit(browser.axe_source())
    async with served(world, tmp_path, sign_in=False) as (url, server):
        async with Client(url, auth=ada(world)) as client:  # the endpoint's first request mounts the pages
            await client.list_tools()
        connections = server.connections
        assert connections is not None
        pages = connections.pages_for(server)
        assert pages is not None
        flow = await connections.start("ada", "gh", await pages.link_base(), None, None)
        await anyio.to_thread.run_sync(world.driver.get, flow.link)
        await anyio.to_thread.run_sync(audit.check, world.driver, "connect-confirm")
        await anyio.to_thread.run_sync(world.driver.get, flow.link)  # used: the refusal page
        await anyio.to_thread.run_sync(audit.check, world.driver, "connect-refused")
    for name, report in audit.seen.items():
        assert [report[k] for k in ("axe-desktop", "axe-phone", "axe-dark")] == [[], [], []], (name, report)
    assert audit.seen["connect-confirm"]["page"] == "page-connect-confirm"
