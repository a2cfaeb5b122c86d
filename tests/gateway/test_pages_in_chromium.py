"""Hosts that cannot ask get the gateway's own pages (the server's fallback ladder), answered in
headless Chromium: a host without elicitation (the call ends with the link; the same call again
continues with the answer) and a host that takes URLs only (the form goes to it as a link)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from elicitkit import Client, ElicitationResult, UrlRequest
from elicitkit.elicitation.requests import ElicitRequest
from elicitkit.gateway import Gateway, parse_config

from .support import backends, typescript_sdk

browser = pytest.importorskip("client.handlers.browser.test_in_chromium", reason="the browser test helpers")
driver = browser.driver  # the module-scoped headless Chromium fixture
WebDriver = Any

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

ERAS = {"2025-11-25": {}, "2026-07-28": {"mode": "modern"}}


@pytest.fixture(scope="module")
async def gateway(state: Path) -> AsyncIterator[Gateway]:
    from elicitkit.server.pages import pages_of

    config = parse_config({"name": "gw", "fallback": "page", "backends": backends()})  # official, FastMCP, TS too
    gateway = Gateway(config)
    async with gateway.running():
        yield gateway
    await pages_of(gateway).aclose()


def answer(chrome: WebDriver, url: str, values: dict[str, str]) -> str:
    """A person on the gateway's page: fills in, reviews, sends; what the page said at the end."""
    browser.load(chrome, url)
    for name, text in values.items():
        browser.type_into(chrome, name, text)
    browser.press(chrome, "button[value=review]")
    browser.press(chrome, "button[value=send]")
    return str(browser.outcome_shown(chrome))


def link_in(text: str) -> str:
    found = re.search(r"http://127\.0\.0\.1:\d+/ask/[A-Za-z0-9_\-]+", text)
    assert found is not None, text
    return found.group(0)


FORMS = {  # the form tool of each backend, what the person types, and what the tool then says
    "old": ("old.book", {"name": "Ada", "seats": "4"}, "booked 4 for Ada"),
    "new": ("new.book", {"name": "Ada", "seats": "4"}, "booked 4 for Ada"),
    "off": ("off.seating", {"name": "Ada"}, '"name": "Ada"'),
    "fast": ("fast.book", {"name": "Ada", "seats": "4"}, "booked 4 for Ada"),
    "ts": ("ts.book", {"name": "Ada", "seats": "4"}, "booked 4 for Ada"),
}
BACKENDS = [
    "old",
    "new",
    "off",
    "fast",
    pytest.param("ts", marks=pytest.mark.skipif(typescript_sdk() is None, reason="no TS SDK")),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("era", list(ERAS))
async def test_a_host_without_elicitation_gets_the_page(
    driver: WebDriver, gateway: Gateway, era: str, backend: str
) -> None:
    tool, values, said = FORMS[backend]
    async with Client(gateway, **ERAS[era]) as client:  # no elicitation_callback: declares none
        first = await client.call_tool(tool)
        shown = await anyio.to_thread.run_sync(answer, driver, link_in(first.text), values)
        claim = (first.structured_content or {}).get("addArguments", {})  # 2026, anonymous: the claim
        second = await client.call_tool(tool, claim)
    assert "answer there" in first.text and shown == "sent"
    assert said in second.text


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("era", list(ERAS))
async def test_a_url_only_host_answers_the_form_on_the_page(
    driver: WebDriver, gateway: Gateway, era: str, backend: str
) -> None:
    shown: list[str] = []

    async def person(request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, UrlRequest)
        shown.append(await anyio.to_thread.run_sync(answer, driver, request.url, values))
        return ElicitationResult.accept()

    tool, values, said = FORMS[backend]
    async with Client(gateway, elicitation_callback=person, elicitation_modes=("url",), **ERAS[era]) as client:
        result = await client.call_tool(tool)
    assert shown == ["sent"] and said in result.text
