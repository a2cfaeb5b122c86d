"""The connect pages refuse what they must, with the right status, and log no secret.

A provider of this test's own (aiohttp on a loopback port) stands in where the failure is
the provider's: its token endpoint answers, fails or hangs as a test says. The person is
httpx with a cookie jar (the Chromium runs are in test_in_chromium.py). Also: ctx.authorize's
other ways of asking: -32042 with the completion notice (2025), the round's URL input without
waiting (2026), and the link result for a client that cannot open URLs.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest
from aiohttp import web

from elicitkit import Client, Context, ElicitationResult, Server, UrlElicitationRequired
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.server.auth.connections import Connections, MemoryConnectionStore, Provider
from elicitkit.server.auth.connections.flows import AUTHORIZING, DONE, FAILED
from elicitkit.server.tasks import InMemoryTaskStore
from elicitkit.transports.http.serve import serve_http_background
from kit.processes import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

ISSUER = "https://provider.example"
SECRET_CODE = "code-must-never-be-logged-4711"


@dataclass
class FakeProvider:
    """The token endpoint: ``mode`` is "ok", "fail" or "hang"; it checks the code and PKCE."""

    url: str = ""
    mode: str = "ok"
    challenges: list[str] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)
    release: anyio.Event = field(default_factory=anyio.Event)  # ends a hang (at teardown)

    async def token(self, request: web.Request) -> web.Response:
        form = await request.post()
        if self.mode == "hang":
            with anyio.move_on_after(30):
                await self.release.wait()
        if self.mode == "fail":
            return web.json_response({"error": "server_error"}, status=500)
        if form.get("grant_type") == "refresh_token":
            if (
                self.mode == "refuse-refresh"
                or str(form.get("refresh_token")).removeprefix("refresh-") not in self.issued
            ):
                return web.json_response({"error": "invalid_grant"}, status=400)
            token = f"access-token-secret-{len(self.issued)}-refreshed"
            self.issued.append(token)
            return web.json_response({"access_token": token, "token_type": "Bearer", "expires_in": 30})
        verifier = str(form.get("code_verifier", ""))
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if form.get("code") != SECRET_CODE or digest not in self.challenges:
            return web.json_response({"error": "invalid_grant"}, status=400)
        token = f"access-token-secret-{len(self.issued)}-abcdef"
        self.issued.append(token)
        return web.json_response(
            {"access_token": token, "token_type": "Bearer", "expires_in": 3600, "refresh_token": "refresh-" + token}
        )

    async def repos(self, request: web.Request) -> web.Response:
        """An API behind the tokens (``/user/repos``, GitHub-style)."""
        if request.headers.get("Authorization", "").removeprefix("Bearer ") not in self.issued:
            return web.json_response({"message": "Bad credentials"}, status=401)
        return web.json_response([{"full_name": "ada/dotfiles"}, {"full_name": "ada/recipes"}])


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    provider = FakeProvider()
    app = web.Application()
    app.router.add_post("/token", provider.token)
    app.router.add_get("/user/repos", provider.repos)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    provider.url = f"http://127.0.0.1:{port}"
    try:
        yield provider
    finally:
        provider.release.set()
        await runner.cleanup()


def build(fake: FakeProvider, *, fleet: bool = False, **options: Any) -> Server:
    """Ada's server (a principal hook); ``fleet``: its stores are left to the backplane (Redis)."""
    provider = Provider(
        "hub",
        client_id="app",
        client_secret="app-secret",
        issuer=ISSUER,
        authorization_endpoint=ISSUER + "/authorize",
        token_endpoint=fake.url + "/token",
        scopes=["repo"],
        title="Hub",
        timeout=1.0,
    )
    connections = Connections([provider], store=None if fleet else MemoryConnectionStore(), **options)
    server = Server(
        "connector",
        task_store=None if fleet else InMemoryTaskStore(),
        connections=connections,
        principal=lambda ctx: "ada",
    )

    @server.tool()
    async def repos(ctx: Context, wait: bool = True) -> str:
        token = await ctx.authorize("hub", timeout=20, wait=wait)
        return f"token {hashlib.sha256(token.encode()).hexdigest()[:8]}"

    return server


@asynccontextmanager
async def serving(fake: FakeProvider, **options: Any) -> AsyncIterator[tuple[str, Connections]]:
    server = build(fake, **options)
    async with serve_http_background(server) as handle:
        assert server.connections is not None
        yield handle.url, server.connections


async def a_link(connections: Connections, url: str) -> tuple[str, str]:
    """A flow for Ada, as ctx.authorize makes one: its id and start link."""
    if connections.pages_for_server is None:  # pages are mounted on the endpoint's first request
        async with httpx.AsyncClient() as http:
            await http.get(url)
    pages = connections.pages_for_server
    assert pages is not None
    flow = await connections.start("ada", "hub", await pages.link_base(), None, None)
    return flow.flow_id, flow.link


async def confirm(http: httpx.AsyncClient, link: str, title: str = "Hub") -> httpx.Response:
    """Open the link, see the confirm page, press Connect: the redirect to the provider."""
    page = await http.get(link)
    assert page.status_code == 200, page.text
    assert f"Connect your {title} account" in page.text and "ada" in page.text  # which account, where
    fields = dict(re.findall(r'name="(flow|token)" value="([^"]+)"', page.text))
    action = urlsplit(link)._replace(path=urlsplit(link).path.replace("start", "confirm"), query="").geturl()
    return await http.post(action, data={**fields, "action": "connect"})


async def to_provider(
    http: httpx.AsyncClient, link: str, fake: FakeProvider, title: str = "Hub", scope: str = "repo"
) -> tuple[str, dict[str, str]]:
    """As far as the provider: the callback URL and the authorization request's parameters."""
    moved = await confirm(http, link, title)
    assert moved.status_code == 303, moved.text
    query = {k: v[0] for k, v in parse_qs(urlsplit(moved.headers["location"]).query).items()}
    assert query["code_challenge_method"] == "S256" and query["scope"] == scope
    fake.challenges.append(query["code_challenge"])
    return query["redirect_uri"], query


async def test_a_start_link_opens_once(fake: FakeProvider) -> None:
    async with serving(fake) as (url, connections), httpx.AsyncClient() as http:
        _, link = await a_link(connections, url)
        assert (await http.get(link)).status_code == 200
        again = await http.get(link)
        assert again.status_code == 410 and "already opened" in again.text


async def test_a_forged_or_expired_link_is_refused(fake: FakeProvider) -> None:
    async with serving(fake, link_ttl=0.5) as (url, connections), httpx.AsyncClient() as http:
        _, link = await a_link(connections, url)
        head, token = link.split("?link=")
        forged = token[:-4] + ("AAAA" if token[-4:] != "AAAA" else "BBBB")
        bad = await http.get(f"{head}?link={forged}")
        assert bad.status_code == 400 and "not valid" in bad.text
        assert (await http.get(head + "?link=")).status_code == 400
        await anyio.sleep(0.6)
        late = await http.get(link)
        assert late.status_code == 410 and "expired" in late.text


async def test_the_confirm_step_only_from_the_browser_that_opened_the_link(fake: FakeProvider) -> None:
    async with serving(fake) as (url, connections), httpx.AsyncClient() as http, httpx.AsyncClient() as other:
        flow_id, link = await a_link(connections, url)
        page = await http.get(link)
        fields = dict(re.findall(r'name="(flow|token)" value="([^"]+)"', page.text))
        action = link.split("start?")[0] + "confirm"
        stolen = await other.post(action, data={**fields, "action": "connect"})
        assert stolen.status_code == 403 and "another browser" in stolen.text
        wrong = await http.post(action, data={**fields, "token": "not-it", "action": "connect"})
        assert wrong.status_code == 403
        cross_site = await http.post(action, data={**fields, "action": "connect"}, headers={"Origin": "https://evil"})
        assert cross_site.status_code == 403
        loaded = await connections.load_flow(flow_id)
        assert loaded is not None and loaded[0].status == "confirming"  # none of them moved it


async def test_the_callback_checks_state_iss_and_error(fake: FakeProvider, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with serving(fake) as (url, connections), httpx.AsyncClient() as http:
        flow_id, link = await a_link(connections, url)
        callback, query = await to_provider(http, link, fake)
        state = query["state"]
        wrong_state = await http.get(callback, params={"state": flow_id + ".guess", "code": SECRET_CODE, "iss": ISSUER})
        assert wrong_state.status_code == 400 and "state" in wrong_state.text
        no_state = await http.get(callback, params={"code": SECRET_CODE})
        assert no_state.status_code == 400
        wrong_iss = await http.get(callback, params={"state": state, "code": SECRET_CODE, "iss": "https://evil"})
        assert wrong_iss.status_code == 400 and "RFC 9207" in wrong_iss.text
        loaded = await connections.load_flow(flow_id)
        assert loaded is not None and loaded[0].status == AUTHORIZING  # forged callbacks do not end the sign-in
        good = await http.get(callback, params={"state": state, "code": SECRET_CODE, "iss": ISSUER})
        assert good.status_code == 200 and "Connected to Hub" in good.text, good.text
        replay = await http.get(callback, params={"state": state, "code": SECRET_CODE, "iss": ISSUER})
        assert replay.status_code == 400
        ended = await connections.wait(flow_id, 1)
        assert ended is not None and ended.status == DONE
        tokens = await connections.token("ada", "hub")
        assert tokens is not None and tokens.access_token == fake.issued[0]
    logged = server_log(caplog)
    assert "refused" in logged  # the refusals above were logged, in words
    assert SECRET_CODE not in logged and fake.issued[0] not in logged and "app-secret" not in logged


async def test_a_provider_error_ends_the_sign_in_declined(fake: FakeProvider) -> None:
    async with serving(fake) as (url, connections), httpx.AsyncClient() as http:
        flow_id, link = await a_link(connections, url)
        callback, query = await to_provider(http, link, fake)
        params = {"state": query["state"], "error": "access_denied", "error_description": "the user said no"}
        denied = await http.get(callback, params=params)
        assert denied.status_code == 403 and "access_denied" in denied.text and "the user said no" in denied.text
        ended = await connections.wait(flow_id, 1)
        assert ended is not None and ended.status == FAILED and "access_denied" in ended.reason
        assert await connections.token("ada", "hub") is None


@pytest.mark.parametrize(("mode", "status", "words"), [("fail", 502, "refused"), ("hang", 504, "did not answer")])
async def test_a_token_endpoint_that_fails_or_hangs(
    fake: FakeProvider, mode: str, status: int, words: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.mode = mode
    async with serving(fake) as (url, connections), httpx.AsyncClient(timeout=10) as http:
        flow_id, link = await a_link(connections, url)
        callback, query = await to_provider(http, link, fake)
        started = time.monotonic()
        reply = await http.get(callback, params={"state": query["state"], "code": SECRET_CODE, "iss": ISSUER})
        assert reply.status_code == status and words in reply.text, reply.text
        assert time.monotonic() - started < 5  # the provider's timeout (1 s), not the hang's
        ended = await connections.wait(flow_id, 1)
        assert ended is not None and ended.status == FAILED
    assert SECRET_CODE not in server_log(caplog) and "access-token-secret" not in server_log(caplog)


def server_log(caplog: pytest.LogCaptureFixture) -> str:
    """What the server side logged (this test's own HTTP client logs the URLs it fetches)."""
    return "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore")))


async def finish_by_hand(link: str, fake: FakeProvider, title: str = "Hub", scope: str = "repo") -> None:
    """The person, without a browser: confirm, then the provider's redirect back with a code."""
    async with httpx.AsyncClient() as http:
        callback, query = await to_provider(http, link, fake, title, scope)
        done = await http.get(callback, params={"state": query["state"], "code": SECRET_CODE, "iss": ISSUER})
        assert done.status_code == 200, done.text


async def never_asked(request: ElicitRequest) -> ElicitationResult[Any]:
    raise AssertionError(f"nobody should be asked here: {request}")


async def test_without_waiting_2025_gets_32042_then_the_completion_notice(fake: FakeProvider) -> None:
    async with (
        serving(fake) as (url, _),
        Client(url, protocol_version="2025-11-25", elicitation_callback=never_asked) as client,
    ):
        with pytest.raises(UrlElicitationRequired) as raised:
            await client.call_tool("repos", {"wait": False})
        (question,) = raised.value.elicitations
        assert "/ask/connect/start?link=" in question.url and question.elicitation_id
        await finish_by_hand(question.url, fake)
        assert await client.wait_for_elicitation_complete(question.elicitation_id, timeout=5)
        again = await client.call_tool("repos", {"wait": False})
    assert again.text.startswith("token ") and not again.is_error


async def test_2026_url_input_in_the_round(fake: FakeProvider) -> None:
    asked: list[UrlRequest] = []

    async def host(request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, UrlRequest)
        asked.append(request)
        await finish_by_hand(request.url, fake)
        return ElicitationResult.accept()

    async with serving(fake) as (url, _), Client(url, mode="modern", elicitation_callback=host) as client:
        result = await client.call_tool("repos", {})
        assert result.text.startswith("token ") and len(asked) == 1
        again = await client.call_tool("repos", {})
    assert again.text == result.text and len(asked) == 1


async def test_a_client_that_cannot_open_urls_gets_the_link_and_calls_again(fake: FakeProvider) -> None:
    async with (
        serving(fake) as (url, _),
        Client(url, protocol_version="2025-11-25", elicitation_modes=("form",)) as client,
    ):
        first = await client.call_tool("repos", {})
        found = re.search(r"http://\S+/ask/connect/start\?link=[A-Za-z0-9_\-]+", first.text)
        assert found is not None, first.text
        await finish_by_hand(found.group(0), fake)
        second = await client.call_tool("repos", {})
    assert second.text.startswith("token "), second.text


async def test_no_principal_no_connection(fake: FakeProvider) -> None:
    server = build(fake)
    server.principal = None
    async with serve_http_background(server) as handle, Client(handle.url, protocol_version="2025-11-25") as client:
        result = await client.call_tool("repos", {})
    assert result.is_error and "whose account" in result.text


async def test_without_http_pages_it_says_to_serve_over_http(fake: FakeProvider) -> None:
    server = build(fake)
    async with Client(server, protocol_version="2025-11-25", elicitation_callback=never_asked) as client:
        result = await client.call_tool("repos", {})
    assert result.is_error and "serve it over HTTP" in result.text
