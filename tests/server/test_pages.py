"""Server-hosted form pages: via="web", the URL-only client, the client without elicitation, the deadline.

The person answers on the server's own page over real HTTP (the loopback listener); the
headless-Chromium run of the same pages is in ``test_pages_in_chromium.py``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

from elicitkit import Client
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.server import Context, Server
from elicitkit.server.pages import configure_pages, pages_of

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
            assert again.status_code == 404  # second submission / reused token
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


async def test_over_stateless_http_an_anonymous_caller_gets_no_replayed_answer() -> None:
    """2026 over HTTP shares one session: without a principal, a link result would let anyone
    making the same call collect the answer, so the page fallback refuses instead."""
    from elicitkit.transports.http.serve import serve_http_background

    server, outcomes = build()
    async with serve_http_background(server) as handle, Client(handle.url, mode="modern") as client:
        result = await client.call_tool("book", {"day": "Friday"})
    assert result.is_error and "told apart" in result.text and outcomes == []


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
        assert set(host.by_key) == {"new"} and host.take("old") is None
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
