"""The server-page examples over stdio: the loopback pages a stdio server starts on demand.

``api_key_setup.py``: the key asked with ``via="web"`` (the client sees only the link), both
eras; ``bistro_any_host.py``: a client without elicitation books a full evening in two calls, the person
answering the page in between, and a client that declares URL mode only gets the same form as
a link to the loopback page, answered in headless Chromium (both eras).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from elicitkit import Client
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from server.test_pages import ERAS, answer_page, page_url, url_person

from ._load import EXAMPLES

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.mark.parametrize("era", ERAS)
async def test_api_key_setup_over_stdio(era: dict[str, Any]) -> None:
    seen: list[ElicitRequest] = []
    person = url_person({"f0": "wk-secret-12345678"}, seen)
    command = [sys.executable, str(EXAMPLES / "elicitation" / "api_key_setup.py")]
    async with Client(command, elicitation_callback=person, **era) as client:
        result = await client.call_tool("connect_weather", {})
    assert result.text == "Connected: a key ending in ...5678 is stored."
    assert isinstance(seen[0], UrlRequest) and seen[0].url.startswith("http://127.0.0.1:")
    assert "wk-secret" not in repr(seen)


@pytest.mark.parametrize("era", ERAS)
async def test_bistro_books_for_a_client_without_elicitation_over_stdio(era: dict[str, Any]) -> None:
    command = [sys.executable, str(EXAMPLES / "elicitation" / "bistro_any_host.py")]
    async with Client(command, **era) as client:
        first = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
        assert not first.is_error and "same arguments" in first.text
        await answer_page(page_url(first.text), {"f1": "2025-12-30", "f0": "on"})
        second = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert second.text == "Table for 2 booked on 2025-12-30."


# -- a client that declares URL mode only, over stdio: the form goes out as a link to the loopback page

browser = pytest.importorskip("client.handlers.browser.test_in_chromium", reason="the browser test helpers")
driver = browser.driver  # the module-scoped headless Chromium fixture


def another_evening(chrome: Any, url: str) -> dict[str, str]:
    """The person at the bistro's page in Chromium: yes, another evening, the 30th; review; send."""
    seen = {"page": browser.load(chrome, url), "who": chrome.find_element(browser.By.CSS_SELECTOR, ".asker").text}
    browser.choose(chrome, "try_other", "Yes")
    browser.type_into(chrome, "date", "2025-12-30")
    seen["review"] = browser.press(chrome, "button[value=review]")
    seen["sent"] = browser.press(chrome, "button[value=send]")
    seen["outcome"] = browser.outcome_shown(chrome)
    return seen


@pytest.mark.parametrize("era", ERAS)
async def test_bistro_books_for_a_url_only_client_over_stdio_in_chromium(driver: Any, era: dict[str, Any]) -> None:
    """The stdio server starts its loopback listener on demand; the client is sent only the link."""
    import anyio.to_thread

    asked: list[ElicitRequest] = []
    pages: list[dict[str, str]] = []

    async def url_only(request: ElicitRequest) -> ElicitationResult[Any]:
        asked.append(request)
        assert isinstance(request, UrlRequest)  # never the form itself
        pages.append(await anyio.to_thread.run_sync(another_evening, driver, request.url))
        return ElicitationResult.accept()

    command = [sys.executable, str(EXAMPLES / "elicitation" / "bistro_any_host.py")]
    async with Client(command, elicitation_callback=url_only, elicitation_modes=("url",), **era) as client:
        result = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
    assert result.text == "Table for 2 booked on 2025-12-30."
    assert len(asked) == 1 and isinstance(asked[0], UrlRequest) and asked[0].url.startswith("http://127.0.0.1:")
    assert pages[0]["page"] == "page-form" and pages[0]["review"] == "page-review" and pages[0]["outcome"] == "sent"
    assert "bistro" in pages[0]["who"]  # the page names the server that asks
