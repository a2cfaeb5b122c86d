"""Server-hosted form pages: via="web", the URL-only client, the client without elicitation, the deadline.

The person answers on the server's own page over real HTTP (the loopback listener); the
headless-Chromium run of the same pages is in ``test_pages_in_chromium.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

from elicitkit import Client
from elicitkit.client.results import CallToolResult
from elicitkit.client.rounds import InputRequiredResult
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.protocol.errors import MCPError
from elicitkit.server import Context, Server
from elicitkit.server.pages import CLAIM_ARGUMENT, configure_pages, pages_of
from elicitkit.testing.kit.serving import asgi_in_process

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

ERAS = [
    pytest.param({"mode": "legacy", "protocol_version": "2025-11-25"}, id="2025-11-25"),
    pytest.param({"mode": "modern", "protocol_version": "2026-07-28"}, id="2026-07-28"),
]


class ApiKey(BaseModel):
    api_key: str


class Booking(BaseModel):
    guests: int


def build() -> tuple[Server, list[str]]:
    server = Server("bistro-test", "1.0.0")
    outcomes: list[str] = []

    @server.tool()
    async def setup_key(ctx: Context) -> str:
        """Store an API key, asked on the server's own page."""
        result = await ctx.elicit("Your API key for the weather service", ApiKey, via="web", timeout=10)
        outcomes.append(result.action.value)
        return f"stored a key of {len(result.data.api_key)} characters" if result.accepted else result.action.value

    @server.tool()
    async def book(ctx: Context, day: str) -> str:
        """Book a table; the party size is asked (falls back to the page)."""
        result = await ctx.elicit(f"How many guests on {day}?", Booking, fallback="page", deadline=0.5, timeout=10)
        outcomes.append(result.action.value)
        return f"booked {result.data.guests} on {day}" if result.accepted else result.action.value

    return server, outcomes


async def answer_page(url: str, values: dict[str, str], *, action: str = "send") -> None:
    """A person on the page: fill in, review, send (or decline / cancel at once)."""
    async with httpx.AsyncClient(follow_redirects=True, timeout=5) as http:
        page = await http.get(url)
        assert page.status_code == 200, page.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None
        if action != "send":
            await http.post(url, data={"csrf": csrf.group(1), "action": action})
            return
        review = await http.post(url, data={"csrf": csrf.group(1), "action": "review", **values})
        review_id = re.search(r'name="review" value="([^"]+)"', review.text)
        assert review_id is not None, review.text
        done = await http.post(url, data={"csrf": csrf.group(1), "action": "send", "review": review_id.group(1)})
        assert done.status_code == 200


def page_url(text: str) -> str:
    found = re.search(r"http://127\.0\.0\.1:\d+/ask/[A-Za-z0-9_\-]+", text)
    assert found is not None, text
    return found.group(0)


@pytest.fixture
async def served() -> AsyncIterator[tuple[Server, list[str]]]:
    server, outcomes = build()
    yield server, outcomes
    await pages_of(server).aclose()


tasks: set[asyncio.Task[None]] = set()


def url_person(values: dict[str, str], seen: list[ElicitRequest], action: str = "send") -> Any:
    """A client that can only open URLs: it consents and the person answers on the page."""

    async def callback(request: ElicitRequest) -> ElicitationResult[Any]:
        seen.append(request)
        assert isinstance(request, UrlRequest)
        # the person answers after the consent went back: the server waits for the page
        task = asyncio.get_running_loop().create_task(answer_page(request.url, values, action=action))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return ElicitationResult.accept()

    return callback


@pytest.mark.parametrize("era", ERAS)
async def test_via_web_asks_on_the_page_and_the_answer_never_passes_through_the_client(
    served: tuple[Server, list[str]], era: dict[str, Any]
) -> None:
    server, outcomes = served
    seen: list[ElicitRequest] = []
    secret = "sk-live-abcdefghij"
    async with Client(server, elicitation_callback=url_person({"f0": secret}, seen), **era) as client:
        result = await client.call_tool("setup_key", {})
    assert result.text == f"stored a key of {len(secret)} characters"
    assert outcomes == ["accept"]  # exactly one outcome reached the call
    assert seen and all(isinstance(r, UrlRequest) for r in seen)
    assert all(secret not in repr(r) for r in seen)
    assert "bistro-test" in seen[0].message or seen[0].url.startswith("http://127.0.0.1:")


@pytest.mark.parametrize("era", ERAS)
async def test_a_url_only_client_gets_the_form_as_a_page(served: tuple[Server, list[str]], era: dict[str, Any]) -> None:
    server, outcomes = served
    seen: list[ElicitRequest] = []
    async with Client(
        server, elicitation_callback=url_person({"f0": "4"}, seen), elicitation_modes=("url",), **era
    ) as client:
        result = await client.call_tool("book", {"day": "Friday"})
    assert result.text == "booked 4 on Friday"
    assert outcomes == ["accept"] and isinstance(seen[0], UrlRequest)


@pytest.mark.parametrize("era", ERAS)
async def test_declining_on_the_page_reaches_the_call_once(
    served: tuple[Server, list[str]], era: dict[str, Any]
) -> None:
    server, outcomes = served
    seen: list[ElicitRequest] = []
    async with Client(server, elicitation_callback=url_person({}, seen, action="decline"), **era) as client:
        result = await client.call_tool("setup_key", {})
    assert result.text == "decline" and outcomes == ["decline"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_without_elicitation_gets_the_link_and_the_same_call_continues(
    served: tuple[Server, list[str]], era: dict[str, Any]
) -> None:
    server, outcomes = served
    async with Client(server, **era) as client:  # no callback: no elicitation declared
        first = await client.call_tool("book", {"day": "Friday"})
        assert not first.is_error
        url = page_url(first.text)
        assert "same arguments" in first.text and outcomes == []
        await answer_page(url, {"f0": "3"})
        other = await client.call_tool("book", {"day": "Saturday"})  # another call does not get the answer
        assert page_url(other.text) != url
        second = await client.call_tool("book", {"day": "Friday"})
        assert second.text == "booked 3 on Friday"
        third = await client.call_tool("book", {"day": "Friday"})  # the answer served once
        assert page_url(third.text) != url
    assert outcomes == ["accept"]


async def test_another_caller_never_gets_someone_elses_answer(served: tuple[Server, list[str]]) -> None:
    server, outcomes = served
    async with Client(server) as alice, Client(server) as bob:
        url = page_url((await alice.call_tool("book", {"day": "Friday"})).text)
        await answer_page(url, {"f0": "2"})
        from_bob = await bob.call_tool("book", {"day": "Friday"})
        assert "booked" not in from_bob.text and page_url(from_bob.text) != url
        assert (await alice.call_tool("book", {"day": "Friday"})).text == "booked 2 on Friday"
    assert outcomes == ["accept"]


async def test_a_client_that_never_answers_is_withdrawn_after_the_deadline_and_gets_the_link(
    served: tuple[Server, list[str]],
) -> None:
    server, outcomes = served
    asked: list[ElicitRequest] = []

    async def never(request: ElicitRequest) -> ElicitationResult[Any]:
        asked.append(request)
        await anyio.sleep(60)
        raise AssertionError("unreachable")

    trace: list[tuple[str, dict[str, Any]]] = []
    async with Client(
        server, elicitation_callback=never, elicitation_modes=("form",), trace=lambda d, m: trace.append((d, m))
    ) as client:
        with anyio.fail_after(10):
            first = await client.call_tool("book", {"day": "Friday"})
        url = page_url(first.text)
        await answer_page(url, {"f0": "5"})
        # the same caller, same call: continues with the page's answer (no form asked this time)
        second = await client.call_tool("book", {"day": "Friday"})
    assert second.text == "booked 5 on Friday"
    assert len(asked) == 1 and outcomes == ["accept"]
    withdrawn = [m for d, m in trace if d == "recv" and m.get("method") == "notifications/cancelled"]
    assert len(withdrawn) == 1  # the unanswered form was withdrawn


async def test_the_server_default_is_the_old_error_and_configure_pages_changes_it() -> None:
    server = Server("plain", "1.0")

    @server.tool()
    async def ask(ctx: Context) -> str:
        result = await ctx.elicit("Guests?", Booking)
        return str(result.data.guests) if result.accepted else "no"

    try:
        async with Client(server) as client:
            before = await client.call_tool("ask", {})
            assert before.is_error  # ElicitationUnsupported, as before
            configure_pages(server, fallback="page")
            after = await client.call_tool("ask", {})
            assert not after.is_error and page_url(after.text)
    finally:
        await pages_of(server).aclose()


# -- refusals: each one leaves the question unanswered, and exactly one outcome reaches the call


async def test_every_forged_or_stale_request_to_a_page_is_refused() -> None:
    server, _ = build()
    host = configure_pages(server, expires_in=2.0)
    try:
        schema = {"type": "object", "properties": {"guests": {"type": "integer"}}, "required": ["guests"]}
        q1, url1 = await host.open("k1", "Guests?", schema)
        q2, url2 = await host.open("k2", "Guests again?", schema)
        base = url1.split("/ask/")[0]
        async with httpx.AsyncClient(timeout=5) as http:
            assert (await http.get(base + "/ask/" + "x" * 43)).status_code == 404  # wrong token
            assert (await http.get(url1, headers={"Host": "evil.example"})).status_code == 403  # foreign Host
            page = await http.get(url1)
            csrf1 = re.search(r'name="csrf" value="([^"]+)"', page.text)
            assert csrf1 is not None
            foreign = await http.post(
                url1, data={"csrf": csrf1.group(1), "action": "decline"}, headers={"Origin": "https://evil.example"}
            )
            assert foreign.status_code == 403  # foreign Origin
            assert (await http.post(url1, data={"action": "decline"})).status_code == 403  # missing CSRF
            other = await http.post(url2, data={"csrf": csrf1.group(1), "action": "decline"})
            assert other.status_code == 403  # q1's page answering q2
            assert q1.result is None and q2.result is None
            first = await http.post(url1, data={"csrf": csrf1.group(1), "action": "decline"})
            assert first.status_code == 303
            again = await http.post(url1, data={"csrf": csrf1.group(1), "action": "cancel"})
            assert again.status_code == 303  # second submission / reused token: led to the outcome, nothing taken
            assert 'id="already"' in (await http.get(url1)).text
            assert q1.result is not None and q1.result.action.value == "decline"  # the first one stands
            await anyio.sleep(2.1)
            assert (await http.get(url2)).status_code == 404  # expired
            assert (await http.post(url2, data={"csrf": q2.csrf, "action": "decline"})).status_code == 404
        assert q2.result is None
    finally:
        await host.aclose()


async def test_on_2025_11_25_the_page_answer_is_followed_by_the_completion_notice(
    served: tuple[Server, list[str]],
) -> None:
    server, _ = served
    seen: list[ElicitRequest] = []
    trace: list[tuple[str, dict[str, Any]]] = []
    async with Client(
        server,
        elicitation_callback=url_person({"f0": "k" * 12}, seen),
        protocol_version="2025-11-25",
        trace=lambda d, m: trace.append((d, m)),
    ) as client:
        await client.call_tool("setup_key", {})
    done = [m for d, m in trace if d == "recv" and m.get("method") == "notifications/elicitation/complete"]
    assert isinstance(seen[0], UrlRequest)
    assert [m["params"]["elicitationId"] for m in done] == [seen[0].elicitation_id]


# -- over HTTP the pages are served beside the endpoint, at /mcp/ask/<token>


@pytest.mark.parametrize("era", ERAS)
async def test_over_http_via_web_is_served_beside_the_endpoint(era: dict[str, Any]) -> None:
    from elicitkit.transports.http.serve import serve_http_background

    server, outcomes = build()
    seen: list[ElicitRequest] = []
    person = url_person({"f0": "sk-123456"}, seen)
    async with (
        serve_http_background(server) as handle,
        Client(handle.url, elicitation_callback=person, **era) as client,
    ):
        result = await client.call_tool("setup_key", {})
    assert result.text == "stored a key of 9 characters" and outcomes == ["accept"]
    assert isinstance(seen[0], UrlRequest) and seen[0].url.startswith(handle.url + "/ask/")


async def test_over_http_a_client_without_elicitation_gets_the_link_and_continues() -> None:
    from elicitkit.transports.http.serve import serve_http_background

    server, outcomes = build()
    async with serve_http_background(server) as handle, Client(handle.url) as client:
        first = await client.call_tool("book", {"day": "Friday"})
        url = re.search(r"http://\S+/mcp/ask/[A-Za-z0-9_\-]+", first.text)
        assert url is not None, first.text
        async with httpx.AsyncClient(timeout=5) as http:  # the page refuses another Host here too
            assert (await http.get(url.group(0), headers={"Host": "evil.example"})).status_code == 403
        await answer_page(url.group(0), {"f0": "6"})
        second = await client.call_tool("book", {"day": "Friday"})
    assert second.text == "booked 6 on Friday" and outcomes == ["accept"]


def claim_of(result: CallToolResult) -> str:
    """The claim a link result hands an anonymous caller (in the text for the model, and structured)."""
    assert result.structured_content is not None, result.text
    claim = result.structured_content["addArguments"][CLAIM_ARGUMENT]
    assert isinstance(claim, str) and f'"{CLAIM_ARGUMENT}": "{claim}"' in result.text
    return claim


def http_page_url(text: str) -> str:
    found = re.search(r"http://\S+/mcp/ask/[A-Za-z0-9_\-]+", text)
    assert found is not None, text
    return found.group(0)


async def test_over_stateless_http_an_anonymous_caller_continues_with_its_claim_and_nobody_else_does() -> None:
    """2026 over HTTP shares one session and an anonymous caller has no principal: the link
    result hands it a claim, and only a call passing that claim back (same arguments) gets the
    answer. Another anonymous caller making the same call gets a page of its own; a claim this
    server did not issue counts for nothing; the claim does not carry over to other arguments."""
    from elicitkit.transports.http.serve import serve_http_background

    server, outcomes = build()
    async with (
        serve_http_background(server) as handle,
        Client(handle.url, mode="modern") as alice,
        Client(handle.url, mode="modern") as mallory,
    ):
        first = await alice.call_tool("book", {"day": "Friday"})
        assert not first.is_error and "same arguments plus" in first.text
        url, claim = http_page_url(first.text), claim_of(first)
        early = await alice.call_tool("book", {"day": "Friday", CLAIM_ARGUMENT: claim})  # not answered yet
        assert http_page_url(early.text) == url and claim_of(early) == claim  # the same page, the same claim
        await answer_page(url, {"f0": "3"})
        same = await mallory.call_tool("book", {"day": "Friday"})  # the same call, without the claim
        assert "booked" not in same.text and http_page_url(same.text) != url and claim_of(same) != claim
        nonce = claim.split(".")[0]
        for forged in (nonce + "." + "0" * 32, "weak.claim", nonce, claim + "x"):
            guess = await mallory.call_tool("book", {"day": "Friday", CLAIM_ARGUMENT: forged})
            assert "booked" not in guess.text and claim_of(guess) not in (claim, forged)
        elsewhere = await mallory.call_tool("book", {"day": "Saturday", CLAIM_ARGUMENT: claim})
        assert "booked" not in elsewhere.text and http_page_url(elsewhere.text) != url
        assert outcomes == []  # nobody got the answer so far
        second = await alice.call_tool("book", {"day": "Friday", CLAIM_ARGUMENT: claim})
        assert second.text == "booked 3 on Friday"
        again = await alice.call_tool("book", {"day": "Friday", CLAIM_ARGUMENT: claim})
        assert "booked" not in again.text  # the answer is served once
    assert outcomes == ["accept"]


async def test_over_stateless_http_an_anonymous_resource_read_is_refused_and_told_why() -> None:
    """A resources/read has no arguments to carry a claim back: without a principal the page
    fallback refuses (an answer must never serve someone else's read) and says what to do."""
    from elicitkit.transports.http.serve import serve_http_background

    server, _ = build()

    @server.resource("bistro://menu")
    async def menu(ctx: Context) -> str:
        result = await ctx.elicit("Which menu?", Booking, fallback="page")
        return str(result.data.guests)

    async with serve_http_background(server) as handle, Client(handle.url, mode="modern") as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("bistro://menu")
    text = str(refused.value)
    assert "told apart" in text and "authenticate callers" in text


async def test_behind_a_proxy_the_public_url_is_the_link_and_its_host_and_origin_are_accepted() -> None:
    server, _ = build()
    host = configure_pages(server, public_url="https://mcp.example.com/mcp")
    app = host.mount("/mcp/ask/", "http://127.0.0.1:8000")
    schema = {"type": "object", "properties": {"guests": {"type": "integer"}}, "required": ["guests"]}
    q, url = await host.open("k", "Guests?", schema)
    assert url == "https://mcp.example.com/mcp/ask/" + q.token
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://mcp.example.com") as http:
        assert (await http.get(q.path)).status_code == 200
        evil = await http.post(
            q.path, data={"csrf": q.csrf, "action": "decline"}, headers={"Origin": "https://x.example"}
        )
        assert evil.status_code == 403
        ok = await http.post(
            q.path, data={"csrf": q.csrf, "action": "decline"}, headers={"Origin": "https://mcp.example.com"}
        )
        assert ok.status_code == 303
    async with httpx.AsyncClient(transport=transport, base_url="http://evil.example") as http:
        assert (await http.get(q.path)).status_code == 403
    assert q.result is not None and q.result.action.value == "decline"


async def test_pages_that_expired_unanswered_are_forgotten() -> None:
    server, _ = build()
    host = configure_pages(server, expires_in=0.05)
    try:
        schema = {"type": "object", "properties": {"guests": {"type": "integer"}}, "required": ["guests"]}
        await host.open("old", "Guests?", schema)
        await anyio.sleep(0.1)
        await host.open("new", "Guests?", schema)
        assert set(host.by_key) == {"new"} and await host.take("old") is None
    finally:
        await host.aclose()


async def test_over_http_a_client_that_never_answers_gets_the_link_after_the_deadline() -> None:
    from elicitkit.transports.http.serve import serve_http_background

    server, outcomes = build()

    async def never(request: ElicitRequest) -> ElicitationResult[Any]:
        await anyio.sleep(60)
        raise AssertionError("unreachable")

    async with (
        serve_http_background(server) as handle,
        Client(handle.url, elicitation_callback=never, elicitation_modes=("form",)) as client,
    ):
        first = await client.call_tool("book", {"day": "Monday"})
        url = re.search(r"http://\S+/mcp/ask/[A-Za-z0-9_\-]+", first.text)
        assert url is not None, first.text
        await answer_page(url.group(0), {"f0": "7"})
        second = await client.call_tool("book", {"day": "Monday"})
    assert second.text == "booked 7 on Monday" and outcomes == ["accept"]


# -- the deadline on 2026-07-28: no request to withdraw, so the deadline rides in the sealed state

MODERN = {"mode": "modern", "protocol_version": "2026-07-28"}


async def by_hand(request: ElicitRequest) -> ElicitationResult[Any]:
    raise AssertionError("this test answers the rounds by hand")


def result_text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block.get("type") == "text")


async def test_on_2026_a_retry_past_the_deadline_without_the_answer_gets_the_link_and_the_next_call_continues(
    served: tuple[Server, list[str]],
) -> None:
    server, outcomes = served
    async with Client(server, elicitation_callback=by_hand, elicitation_modes=("form",), **MODERN) as client:
        pending = await client.call_tool("book", {"day": "Monday"}, input_required="return")
        assert isinstance(pending, InputRequiredResult)
        [(key, asked)] = pending.input_requests.items()
        assert asked.params.get("mode", "form") == "form"
        early = await client.resume(pending, {}, input_required="return")  # within the deadline: asked again
        assert isinstance(early, InputRequiredResult) and list(early.input_requests) == [key]
        await anyio.sleep(0.6)  # past the 0.5 s deadline, counted from the first round (sealed)
        late = await client.resume(early, {}, input_required="return")
        assert isinstance(late, dict) and late.get("resultType") == "complete" and not late.get("isError")
        url = page_url(result_text(late))
        assert "same arguments" in result_text(late) and outcomes == []
        await answer_page(url, {"f0": "4"})
        second = await client.call_tool("book", {"day": "Monday"})  # a new call: continues with the page's answer
    assert second.text == "booked 4 on Monday" and outcomes == ["accept"]


async def test_on_2026_an_answer_that_comes_back_after_the_deadline_is_still_used(
    served: tuple[Server, list[str]],
) -> None:
    """Nothing was withdrawn on 2026 (the person's form stayed open): their late answer stands."""
    server, outcomes = served
    async with Client(server, elicitation_callback=by_hand, elicitation_modes=("form",), **MODERN) as client:
        pending = await client.call_tool("book", {"day": "Tuesday"}, input_required="return")
        assert isinstance(pending, InputRequiredResult)
        await anyio.sleep(0.6)
        [key] = pending.input_requests
        done = await client.resume(pending, {key: {"action": "accept", "content": {"guests": 2}}})
    assert isinstance(done, dict) and result_text(done) == "booked 2 on Tuesday" and outcomes == ["accept"]


async def test_on_2026_over_stateless_http_the_deadline_link_carries_a_claim() -> None:
    from elicitkit.transports.http.serve import serve_http_background

    server, outcomes = build()
    async with (
        serve_http_background(server) as handle,
        Client(handle.url, elicitation_callback=by_hand, elicitation_modes=("form",), **MODERN) as client,
        Client(handle.url, **MODERN) as other,
    ):
        pending = await client.call_tool("book", {"day": "Monday"}, input_required="return")
        assert isinstance(pending, InputRequiredResult)
        await anyio.sleep(0.6)
        late = await client.resume(pending, {}, input_required="return")
        assert isinstance(late, dict)
        link = CallToolResult.model_validate(late)
        url, claim = http_page_url(link.text), claim_of(link)
        await answer_page(url, {"f0": "8"})
        stranger = await other.call_tool("book", {"day": "Monday"})
        assert "booked" not in stranger.text
        second = await client.call_tool("book", {"day": "Monday", CLAIM_ARGUMENT: claim})
    assert second.text == "booked 8 on Monday" and outcomes == ["accept"]


# -- a tool asking several questions of a client without elicitation: one page per call, answers kept


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_with_two_questions_gets_both_answers_over_three_calls(era: dict[str, Any]) -> None:
    server = Server("two-questions", "1.0")

    @server.tool()
    async def plan(ctx: Context, day: str) -> str:
        party = await ctx.elicit(f"How many guests on {day}?", Booking, fallback="page")
        key = await ctx.elicit("Your booking-system key", ApiKey, fallback="page")
        return f"{party.data.guests} guests, key {key.data.api_key}"

    try:
        async with Client(server, **era) as client:
            first = await client.call_tool("plan", {"day": "Friday"})
            await answer_page(page_url(first.text), {"f0": "5"})
            second = await client.call_tool("plan", {"day": "Friday"})  # the first answer used, the second asked
            assert "booking-system key" in second.text and page_url(second.text) != page_url(first.text)
            await answer_page(page_url(second.text), {"f0": "k-1"})
            third = await client.call_tool("plan", {"day": "Friday"})
            assert third.text == "5 guests, key k-1"
            fourth = await client.call_tool("plan", {"day": "Friday"})  # done: the answers were used up
            assert "How many guests" in fourth.text
    finally:
        await pages_of(server).aclose()


# -- create_app: the server inside a user's Starlette app, its pages under the app's own prefix


@contextlib.asynccontextmanager
async def user_app(server: Server, prefix: str = "/tools") -> AsyncIterator[str]:
    """A user's app (a home page, the MCP app mounted at ``prefix``) under uvicorn; yields the MCP URL."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    from elicitkit.transports.http.serve import create_app

    mcp = create_app(server)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with mcp.router.lifespan_context(mcp):  # Starlette does not run a mounted app's lifespan
            yield

    async def home(_: Request) -> PlainTextResponse:
        return PlainTextResponse("the user's own app")

    app = Starlette(routes=[Route("/", home), Mount(prefix, app=mcp)], lifespan=lifespan)
    try:
        async with asgi_in_process(app) as base:
            yield f"{base}{prefix}/mcp"
    finally:
        await pages_of(server).aclose()


@pytest.mark.parametrize("era", ERAS)
async def test_create_app_mounted_under_a_prefix_serves_its_pages_there(era: dict[str, Any]) -> None:
    server, outcomes = build()
    seen: list[ElicitRequest] = []
    async with (
        user_app(server) as url,
        Client(url, elicitation_callback=url_person({"f0": "sk-98765"}, seen), **era) as client,
    ):
        result = await client.call_tool("setup_key", {})
        async with httpx.AsyncClient(timeout=5) as http:
            assert (await http.get(url.rsplit("/tools", 1)[0] + "/")).text == "the user's own app"
    assert result.text == "stored a key of 8 characters" and outcomes == ["accept"]
    assert isinstance(seen[0], UrlRequest) and seen[0].url.startswith(url + "/ask/")


async def test_create_app_link_fallback_under_a_prefix() -> None:
    server, outcomes = build()
    async with user_app(server, "/apps/bistro") as url, Client(url) as client:
        first = await client.call_tool("book", {"day": "Friday"})
        link = re.search(r"http://\S+/ask/[A-Za-z0-9_\-]+", first.text)
        assert link is not None and link.group(0).startswith(url + "/ask/"), first.text
        async with httpx.AsyncClient(timeout=5) as http:  # the page refuses a foreign Host here too
            assert (await http.get(link.group(0), headers={"Host": "evil.example"})).status_code == 403
        await answer_page(link.group(0), {"f0": "2"})
        second = await client.call_tool("book", {"day": "Friday"})
    assert second.text == "booked 2 on Friday" and outcomes == ["accept"]


async def test_create_app_never_makes_links_from_a_host_it_cannot_vouch_for() -> None:
    """Reached first under a name it does not know (no DNS-rebinding guard to vet it), the app
    does not put that name in the links other people get: pages need ``public_url`` then."""
    from elicitkit.elicitation.errors import ElicitationUnsupported
    from elicitkit.transports.http.serve import create_app

    server, _ = build()
    app = create_app(server)
    host = pages_of(server)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://evil.example") as http:
            await http.get("/mcp")
            with pytest.raises(ElicitationUnsupported, match="public_url"):
                await host.base_url()
            assert (await http.get("/mcp/ask/" + "x" * 43)).status_code == 403  # nor answers to it
        configure_pages(server, public_url="https://bistro.example/mcp")
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://evil.example") as http:
            await http.get("/mcp")
        schema = {"type": "object", "properties": {"guests": {"type": "integer"}}, "required": ["guests"]}
        q, link = await host.open("k", "Guests?", schema)
        assert link == "https://bistro.example/mcp/ask/" + q.token
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8000") as http:
            await http.get("/mcp")  # a loopback name: vetted, learnt
        q2, link2 = await host.open("k2", "Guests?", schema)
        assert link2 == "https://bistro.example/mcp/ask/" + q2.token  # public_url still wins
    finally:
        await host.aclose()
