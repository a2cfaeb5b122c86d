"""The server's own form pages in headless Chromium: via="web" with a password, a URL-only
client, a client without elicitation (two calls, the person answers in between), an anonymous
stateless 2026 caller continuing with its claim, the deadline then the link (both eras), and
the pages of a server mounted with ``create_app`` under a user app's prefix.

The Selenium driver and page helpers are the browser handler's (one Chromium per module); the
person runs in a worker thread (Selenium blocks) while the call waits in the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import anyio
import anyio.to_thread
import pytest
from pydantic import BaseModel, Field

from elicitkit import Client
from elicitkit.client.results import CallToolResult
from elicitkit.client.rounds import InputRequiredResult
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.server import Context, Server
from elicitkit.server.pages import CLAIM_ARGUMENT, pages_of

from .test_pages import ERAS, page_url

browser = pytest.importorskip("client.handlers.browser.test_in_chromium", reason="the browser test helpers")
driver = browser.driver  # the module-scoped headless Chromium fixture
WebDriver = Any
By = browser.By

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


class Credentials(BaseModel):
    user: Annotated[str, Field(title="User name")]
    password: Annotated[str, Field(title="Password")]  # masked by its name: a secret


class Party(BaseModel):
    guests: Annotated[int, Field(ge=1, le=12, title="Guests")]


def build() -> Server:
    server = Server("bistro", "1.0.0", title="Bistro du Coin")

    @server.tool()
    async def login(ctx: Context) -> str:
        """Sign in to the booking system; the password is asked on the server's page."""
        result = await ctx.elicit("Sign in to the booking system", Credentials, via="web", timeout=30)
        if not result.accepted:
            return result.action.value
        return f"{result.data.user} signed in with a {len(result.data.password)}-character password"

    @server.tool()
    async def book(ctx: Context, day: str) -> str:
        """Book a table (falls back to the page)."""
        result = await ctx.elicit(f"How many guests on {day}?", Party, fallback="page", timeout=30)
        return f"booked {result.data.guests} on {day}" if result.accepted else result.action.value

    return server


def answer(chrome: WebDriver, url: str, values: dict[str, str]) -> dict[str, Any]:
    """A person on the page: sees who asks, fills in, reviews, sends."""
    seen: dict[str, Any] = {"page": browser.load(chrome, url)}
    seen["who"] = chrome.find_element(By.CSS_SELECTOR, ".asker .who").text
    seen["types"] = {name: browser.field_input(chrome, name).get_attribute("type") for name in values}
    for name, text in values.items():
        browser.type_into(chrome, name, text)
    seen["review_page"] = browser.press(chrome, "button[value=review]")
    seen["review_text"] = chrome.find_element(By.TAG_NAME, "body").text
    seen["done_page"] = browser.press(chrome, "button[value=send]")
    seen["done"] = browser.outcome_shown(chrome)
    return seen


def person_by_url(chrome: WebDriver, values: dict[str, str], seen: list[dict[str, Any]]) -> Callable[..., Any]:
    """A URL-only client's callback: consent, then the person answers on the page in Chromium."""

    async def callback(request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, UrlRequest)
        seen.append(await anyio.to_thread.run_sync(answer, chrome, request.url, values))
        return ElicitationResult.accept()

    return callback


@pytest.mark.parametrize("era", ERAS)
async def test_via_web_password_in_chromium(driver: WebDriver, era: dict[str, Any]) -> None:
    server = build()
    seen: list[dict[str, Any]] = []
    person = person_by_url(driver, {"user": "ada", "password": "correct horse"}, seen)
    try:
        async with Client(server, elicitation_callback=person, **era) as client:
            result = await client.call_tool("login", {})
    finally:
        await pages_of(server).aclose()
    assert result.text == "ada signed in with a 13-character password"
    assert seen[0]["types"] == {"user": "text", "password": "password"}
    assert "Bistro du Coin" in seen[0]["who"]
    assert "correct horse" not in seen[0]["review_text"]  # a secret is never shown back in clear
    assert (seen[0]["review_page"], seen[0]["done_page"], seen[0]["done"]) == ("page-review", "page-done", "sent")


@pytest.mark.parametrize("era", ERAS)
async def test_url_only_client_answers_the_form_in_chromium(driver: WebDriver, era: dict[str, Any]) -> None:
    server = build()
    seen: list[dict[str, Any]] = []
    try:
        async with Client(
            server, elicitation_callback=person_by_url(driver, {"guests": "4"}, seen), elicitation_modes=("url",), **era
        ) as client:
            result = await client.call_tool("book", {"day": "Friday"})
    finally:
        await pages_of(server).aclose()
    assert result.text == "booked 4 on Friday" and seen[0]["done"] == "sent"


@pytest.mark.parametrize("era", ERAS)
async def test_no_elicitation_two_calls_with_the_answer_in_chromium_between(
    driver: WebDriver, era: dict[str, Any]
) -> None:
    server = build()
    try:
        async with Client(server, **era) as client:
            first = await client.call_tool("book", {"day": "Friday"})
            seen = await anyio.to_thread.run_sync(answer, driver, page_url(first.text), {"guests": "2"})
            second = await client.call_tool("book", {"day": "Friday"})
    finally:
        await pages_of(server).aclose()
    assert seen["done"] == "sent" and second.text == "booked 2 on Friday"


async def test_a_client_that_never_answers_then_the_link_in_chromium(driver: WebDriver) -> None:
    server = build()

    @server.tool()
    async def book_soon(ctx: Context, day: str) -> str:
        """Book, but give the host only a moment to show the form."""
        result = await ctx.elicit(f"Guests on {day}?", Party, fallback="page", deadline=0.5, timeout=30)
        return f"booked {result.data.guests} on {day}" if result.accepted else result.action.value

    async def never(request: ElicitRequest) -> ElicitationResult[Any]:
        await anyio.sleep(60)
        raise AssertionError("unreachable")

    try:
        async with Client(server, elicitation_callback=never, protocol_version="2025-11-25") as client:
            first = await client.call_tool("book_soon", {"day": "Sunday"})
            url = page_url(first.text)
            seen = await anyio.to_thread.run_sync(answer, driver, url, {"guests": "3"})
            again = await anyio.to_thread.run_sync(browser.load, driver, url)  # Reload: how it ended, no form
            second = await client.call_tool("book_soon", {"day": "Sunday"})
    finally:
        await pages_of(server).aclose()
    assert seen["done"] == "sent" and again == "page-done"
    assert second.text == "booked 3 on Sunday"


# -- stateless 2026 HTTP, anonymous callers: the link result's claim is what continues the call


async def test_anonymous_2026_http_caller_with_its_claim_in_chromium(driver: WebDriver) -> None:
    from elicitkit.transports.http.serve import serve_http_background

    from .test_pages import claim_of, http_page_url

    server = build()
    async with (
        serve_http_background(server) as handle,
        Client(handle.url, mode="modern") as alice,
        Client(handle.url, mode="modern") as bob,
    ):
        first = await alice.call_tool("book", {"day": "Friday"})
        url, claim = http_page_url(first.text), claim_of(first)
        seen = await anyio.to_thread.run_sync(answer, driver, url, {"guests": "6"})
        from_bob = await bob.call_tool("book", {"day": "Friday"})  # same call, another anonymous caller
        second = await alice.call_tool("book", {"day": "Friday", CLAIM_ARGUMENT: claim})
    assert seen["done"] == "sent" and "Bistro du Coin" in seen["who"]
    assert "booked" not in from_bob.text and http_page_url(from_bob.text) != url
    assert second.text == "booked 6 on Friday"


# -- the deadline on 2026-07-28: a retry past it without the answer gets the link


async def test_2026_deadline_then_the_link_in_chromium(driver: WebDriver) -> None:
    server = build()

    @server.tool()
    async def book_soon(ctx: Context, day: str) -> str:
        """Book, but give the host only a moment to show the form."""
        result = await ctx.elicit(f"Guests on {day}?", Party, fallback="page", deadline=0.5, timeout=30)
        return f"booked {result.data.guests} on {day}" if result.accepted else result.action.value

    async def by_hand(request: ElicitRequest) -> ElicitationResult[Any]:
        raise AssertionError("the rounds are answered by hand")

    try:
        async with Client(server, elicitation_callback=by_hand, elicitation_modes=("form",), mode="modern") as client:
            pending = await client.call_tool("book_soon", {"day": "Sunday"}, input_required="return")
            assert isinstance(pending, InputRequiredResult)
            await anyio.sleep(0.6)
            late = await client.resume(pending, {}, input_required="return")  # back, without the answer
            assert isinstance(late, dict)
            url = page_url(CallToolResult.model_validate(late).text)
            seen = await anyio.to_thread.run_sync(answer, driver, url, {"guests": "3"})
            second = await client.call_tool("book_soon", {"day": "Sunday"})
    finally:
        await pages_of(server).aclose()
    assert seen["done"] == "sent" and second.text == "booked 3 on Sunday"


# -- create_app: the server mounted in a user's Starlette app, the page under the app's prefix


@pytest.mark.parametrize("era", ERAS)
async def test_create_app_under_a_prefix_password_in_chromium(driver: WebDriver, era: dict[str, Any]) -> None:
    from .test_pages import user_app

    server = build()
    seen: list[dict[str, Any]] = []
    person = person_by_url(driver, {"user": "ada", "password": "hunter2hunter2"}, seen)
    asked: list[str] = []

    async def callback(request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, UrlRequest)
        asked.append(request.url)
        return await person(request)  # type: ignore[no-any-return]

    async with user_app(server, "/apps/bistro") as url, Client(url, elicitation_callback=callback, **era) as client:
        result = await client.call_tool("login", {})
    assert result.text == "ada signed in with a 14-character password"
    assert asked[0].startswith(url + "/ask/") and seen[0]["types"]["password"] == "password"
    assert seen[0]["done"] == "sent"
