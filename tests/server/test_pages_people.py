"""Several people answering pages of one tool on one server at once (issue 25).

Each person is an HTTP client that behaves like a browser tab: it follows redirects itself and
records every page it is shown, and after sending it keeps reloading its finished page (as the
``Refresh`` header asks) while the others' calls open pages. Checked: each answer reaches its
own call exactly once, no tab is ever moved to another person's question, and a re-call after
an answer was used opens a fresh page whose answer is the one used.
"""

from __future__ import annotations

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
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.server import Context, Server
from elicitkit.server.pages import CLAIM_ARGUMENT, configure_pages, pages_of
from kit.page_tab import Tab

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

LINK = re.compile(r"http://\S+/ask/[A-Za-z0-9_\-]+")


class Booking(BaseModel):
    guests: int


class ApiKey(BaseModel):
    api_key: str


def build() -> tuple[Server, list[str]]:
    server = Server("people-test", "1.0.0")
    served: list[str] = []

    @server.tool()
    async def book(ctx: Context, day: str) -> str:
        """The party size, on the server's page for a client without elicitation."""
        result = await ctx.elicit(f"How many guests on {day}?", Booking, fallback="page", timeout=20)
        text = f"booked {result.data.guests} on {day}" if result.accepted else result.action.value
        served.append(text)
        return text

    @server.tool()
    async def setup_key(ctx: Context) -> str:
        """An API key, always on the server's page (URL mode)."""
        result = await ctx.elicit("Your API key", ApiKey, via="web", timeout=20)
        text = f"key {result.data.api_key}" if result.accepted else result.action.value
        served.append(text)
        return text

    return server, served


@pytest.fixture
async def http_server() -> AsyncIterator[tuple[str, list[str]]]:
    from elicitkit.transports.http.serve import serve_http_background

    server, served = build()
    async with serve_http_background(server) as handle:
        yield handle.url, served
    await pages_of(server).aclose()


def link_of(result: CallToolResult) -> str:
    found = LINK.search(result.text)
    assert found is not None, result.text
    return found.group(0)


def claim_args(result: CallToolResult) -> dict[str, Any]:
    structured = result.structured_content or {}
    return dict(structured.get("addArguments") or {})


ERAS = [
    pytest.param({"protocol_version": "2025-11-25"}, id="2025-sessions"),
    pytest.param({"mode": "modern", "protocol_version": "2026-07-28"}, id="2026-stateless-claims"),
]


@pytest.mark.parametrize("people", [2, 3])
@pytest.mark.parametrize("era", ERAS)
async def test_people_answering_pages_of_one_tool_each_get_their_own_answer_once(
    http_server: tuple[str, list[str]], people: int, era: dict[str, Any]
) -> None:
    url, served = http_server
    names = ["alice", "bob", "carol"][:people]
    async with httpx.AsyncClient(timeout=10) as raw:
        tabs = {name: Tab(raw) for name in names}
        async with contextlib.AsyncExitStack() as stack:
            clients = {name: await stack.enter_async_context(Client(url, **era)) for name in names}
            # 1. everyone calls; everyone answers at once; finished tabs keep reloading while the
            #    others' re-calls (and fresh pages) happen
            firsts: dict[str, CallToolResult] = {}

            async def call(name: str) -> None:
                firsts[name] = await clients[name].call_tool("book", {"day": "Friday"})

            async with anyio.create_task_group() as tg:
                for name in names:
                    tg.start_soon(call, name)
            links = {name: link_of(firsts[name]) for name in names}
            assert len(set(links.values())) == people
            guests = {name: str(index + 2) for index, name in enumerate(names)}

            async def person(name: str) -> None:
                await tabs[name].answer(links[name], guests[name])
                await tabs[name].keep_reloading(links[name], 6, 0.15)

            async def recaller(name: str) -> str:
                args = {"day": "Friday", **claim_args(firsts[name])}
                return (await clients[name].call_tool("book", args)).text

            async with anyio.create_task_group() as tg:
                for name in names:
                    tg.start_soon(person, name)
            seconds: dict[str, str] = {}

            async def second(name: str) -> None:
                seconds[name] = await recaller(name)

            async with anyio.create_task_group() as tg:  # the answers are used, each by its own call
                for name in names:
                    tg.start_soon(second, name)
            assert seconds == {name: f"booked {guests[name]} on Friday" for name in names}

            # 2. each calls again: the answer was used, so a fresh page, whose answer is then the one used
            thirds = {
                name: await clients[name].call_tool("book", {"day": "Friday", **claim_args(firsts[name])})
                for name in names
            }
            fresh = {name: link_of(thirds[name]) for name in names}
            assert all(fresh[name] != links[name] for name in names) and len(set(fresh.values())) == people
            again = {name: str(index + 7) for index, name in enumerate(names)}

            async def person_again(name: str) -> None:
                await tabs[name].answer(fresh[name], again[name])
                await tabs[name].keep_reloading(fresh[name], 4, 0.15)

            async with anyio.create_task_group() as tg:
                for name in names:
                    tg.start_soon(person_again, name)
            for name in names:
                args = {"day": "Friday", **claim_args(thirds[name])}
                assert (await clients[name].call_tool("book", args)).text == f"booked {again[name]} on Friday"
    for name in names:
        assert tabs[name].strangers() == [], (name, tabs[name].shown)  # nobody's tab showed another's question
    # every answer reached exactly one call: one served result per answer given
    expected = sorted(
        [f"booked {guests[n]} on Friday" for n in names] + [f"booked {again[n]} on Friday" for n in names]
    )
    assert sorted(served) == expected


async def test_a_finished_tab_is_never_moved_to_the_next_persons_question(http_server: tuple[str, list[str]]) -> None:
    """Defect 1 alone: Alice's finished page reloads while Bob's call opens its page."""
    url, _ = http_server
    async with httpx.AsyncClient(timeout=10) as raw, Client(url) as alice, Client(url) as bob:
        tab = Tab(raw)
        alice_link = link_of(await alice.call_tool("book", {"day": "Friday"}))
        await tab.answer(alice_link, "2")
        bob_link = link_of(await bob.call_tool("book", {"day": "Friday"}))
        shown = await tab.get(alice_link)
        assert tab.strangers() == [] and 'data-outcome="sent"' in shown.text
        assert "Question 2" not in shown.text and "answered on this page before" not in shown.text
        assert httpx.URL(bob_link).path not in tab.shown
        assert (await alice.call_tool("book", {"day": "Friday"})).text == "booked 2 on Friday"


@pytest.mark.parametrize("people", [2, 3])
async def test_people_answering_via_web_pages_at_once_each_reach_their_own_call(
    http_server: tuple[str, list[str]], people: int
) -> None:
    url, served = http_server
    names = ["alice", "bob", "carol"][:people]
    keys = {name: f"sk-{name}-{index}" for index, name in enumerate(names)}
    results: dict[str, str] = {}
    async with httpx.AsyncClient(timeout=10) as raw:
        tabs = {name: Tab(raw) for name in names}

        def consent(name: str) -> Any:
            async def callback(request: ElicitRequest) -> ElicitationResult[Any]:
                assert isinstance(request, UrlRequest)
                # the person answers after consenting (the call waits for the page), in the background
                tasks.start_soon(tabs[name].answer, request.url, keys[name])
                return ElicitationResult.accept()

            return callback

        async def run(name: str) -> None:
            async with Client(url, elicitation_callback=consent(name), protocol_version="2025-11-25") as client:
                results[name] = (await client.call_tool("setup_key", {})).text

        async with anyio.create_task_group() as tasks, anyio.create_task_group() as tg:
            for name in names:
                tg.start_soon(run, name)
    assert results == {name: f"key {keys[name]}" for name in names}
    assert sorted(served) == sorted(f"key {k}" for k in keys.values())
    for name in names:
        assert tabs[name].strangers() == [], (name, tabs[name].shown)


async def test_the_page_says_the_server_at_its_address_serves_it(http_server: tuple[str, list[str]]) -> None:
    url, _ = http_server
    async with httpx.AsyncClient(timeout=10) as http, Client(url) as client:
        link = link_of(await client.call_tool("book", {"day": "Friday"}))
        page = await http.get(link)
        origin = url.split("/mcp")[0]
        assert f"served by the MCP server at <bdi>{origin}</bdi>" in page.text
        assert "your MCP client on this computer" not in page.text
        refused = await http.post(link, data={"csrf": "forged", "action": "decline"})
        assert refused.status_code == 403 and "this client" not in refused.text


async def test_after_answering_for_a_host_without_elicitation_the_page_says_go_back_to_the_chat(
    http_server: tuple[str, list[str]],
) -> None:
    url, _ = http_server
    async with httpx.AsyncClient(timeout=10) as raw, Client(url) as client:
        tab = Tab(raw)
        link = link_of(await client.call_tool("book", {"day": "Friday"}))
        await tab.answer(link, "4")
        done = await tab.get(link)
        assert 'id="go-back"' in done.text and "go back to your chat" in done.text


async def test_a_re_call_after_use_never_gets_the_old_answer_back() -> None:
    """Defect 2 alone, in one process: use, re-call (fresh page), answer it: the new answer is used."""
    server, _ = build()
    try:
        async with Client(server) as client, httpx.AsyncClient(timeout=10) as raw:
            tab = Tab(raw)
            first = link_of(await client.call_tool("book", {"day": "Friday"}))
            await tab.answer(first, "3")
            assert (await client.call_tool("book", {"day": "Friday"})).text == "booked 3 on Friday"
            fresh = link_of(await client.call_tool("book", {"day": "Friday"}))
            assert fresh != first
            await tab.answer(fresh, "9")
            assert (await client.call_tool("book", {"day": "Friday"})).text == "booked 9 on Friday"
            assert "booked" not in (await client.call_tool("book", {"day": "Friday"})).text  # and it is used once
    finally:
        await pages_of(server).aclose()


async def test_on_2026_a_second_caller_holding_the_same_claim_does_not_get_the_result_again(
    http_server: tuple[str, list[str]],
) -> None:
    url, served = http_server
    modern = {"mode": "modern", "protocol_version": "2026-07-28"}
    async with httpx.AsyncClient(timeout=10) as raw, Client(url, **modern) as alice, Client(url, **modern) as copy:
        first = await alice.call_tool("book", {"day": "Friday"})
        args = {"day": "Friday", CLAIM_ARGUMENT: claim_args(first)[CLAIM_ARGUMENT]}
        await Tab(raw).answer(link_of(first), "5")
        assert (await alice.call_tool("book", args)).text == "booked 5 on Friday"
        stolen = await copy.call_tool("book", args)
        assert "booked" not in stolen.text
        stolen_again = await copy.call_tool("book", args)  # after it opened a fresh page: still not the old answer
        assert "booked" not in stolen_again.text
    assert served == ["booked 5 on Friday"]


# -- defect 6: found by fuzzing the pages


class Pick(BaseModel):
    size: str
    guests: int


PICK_SCHEMA = {
    "type": "object",
    "properties": {
        "size": {"type": "string", "enum": ["s", "m", "l"]},
        "extras": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "guests": {"type": "integer"},
    },
    "required": ["size"],
}


@pytest.mark.parametrize(
    ("field", "text"),
    [("f0", "\u00b2"), ("f0", "9" * 5000), ("f1", "\u00b2"), ("f1", "9" * 5000)]
    + [("f2", bad) for bad in ("\u0665", "1_000", "+7", "9" * 5000, "\u00b2")],
)
async def test_a_strange_choice_or_number_is_a_field_error_never_a_500(field: str, text: str) -> None:
    server, _ = build()
    host = configure_pages(server)
    try:
        q, url = await host.open("k", "Pick", PICK_SCHEMA)
        async with httpx.AsyncClient(timeout=10) as http:
            form = {"csrf": q.csrf, "action": "review", "f0": "s", field: text}
            posted = await http.post(url, data=form)
            assert posted.status_code == 303, posted.text
            page = await http.get(url)
        assert page.status_code == 200 and 'class="error"' in page.text and q.result is None
    finally:
        await host.aclose()


async def test_open_pages_are_capped() -> None:
    server = Server("capped", "1.0")

    @server.tool()
    async def ask(ctx: Context, n: int) -> str:
        result = await ctx.elicit("Guests?", Booking, fallback="page")
        return str(result.data.guests)

    configure_pages(server, max_pages=3)
    try:
        async with Client(server) as client:
            for n in range(3):
                assert LINK.search((await client.call_tool("ask", {"n": n})).text)
            over = await client.call_tool("ask", {"n": 99})
            assert over.is_error and "pages open, its limit" in over.text
            again = await client.call_tool("ask", {"n": 0})  # an open page is still reused
            assert LINK.search(again.text)
    finally:
        await pages_of(server).aclose()


async def test_a_via_web_call_ends_when_its_page_expires() -> None:
    server, _ = build()
    configure_pages(server, expires_in=1)

    async def consent_and_walk_away(request: ElicitRequest) -> ElicitationResult[Any]:
        return ElicitationResult.accept()

    try:
        async with Client(server, elicitation_callback=consent_and_walk_away) as client:
            started = anyio.current_time()
            result = await client.call_tool("setup_key", {})
            took = anyio.current_time() - started
        assert result.is_error and "no answer on the page in time" in result.text
        assert took < 5  # the page died after 1 s; the call's own timeout is 20 s
    finally:
        await pages_of(server).aclose()


async def test_two_host_fields_are_refused_like_the_endpoint_does() -> None:
    """Whatever server runs the app (some HTTP parsers pass both fields on), the app itself refuses."""
    server, _ = build()
    host = configure_pages(server)
    try:
        _question, url = await host.open("k", "Guests?", PICK_SCHEMA)
        target = httpx.URL(url)
        own = target.netloc
        sent: list[dict[str, Any]] = []
        for hosts in ([own, b"evil.example"], [own]):
            scope = {
                "type": "http",
                "method": "GET",
                "path": target.path,
                "raw_path": target.raw_path,
                "query_string": b"",
                "headers": [(b"host", h) for h in hosts],
                "scheme": "http",
                "server": ("127.0.0.1", target.port),
                "client": ("127.0.0.1", 5555),
                "http_version": "1.1",
                "root_path": "",
            }

            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": b"", "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                sent.append(message)

            await host.app(scope, receive, send)
        statuses = [m["status"] for m in sent if m["type"] == "http.response.start"]
        assert statuses == [403, 200]  # two Host fields: refused; the one own Host: the page
    finally:
        await host.aclose()


async def test_a_browser_that_disconnects_mid_post_is_not_an_error(caplog: pytest.LogCaptureFixture) -> None:
    server, _ = build()
    host = configure_pages(server)
    try:
        q, url = await host.open("k", "Guests?", PICK_SCHEMA)
        target = httpx.URL(url)
        with caplog.at_level("DEBUG"):
            stream = await anyio.connect_tcp(target.host, target.port or 80)
            head = (
                f"POST {target.raw_path.decode()} HTTP/1.1\r\nHost: {target.netloc.decode()}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 5000\r\n\r\ncsrf="
            )
            await stream.send(head.encode())
            await anyio.sleep(0.2)
            await stream.aclose()  # gone before the body is complete
            await anyio.sleep(0.5)
        errors = [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
        assert errors == [], [r.getMessage() for r in errors]
        assert all(q.token not in r.getMessage() for r in caplog.records)  # a page's token is a secret
        assert q.result is None
    finally:
        await host.aclose()
