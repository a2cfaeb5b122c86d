"""The browser form where no graphical browser opens (SSH, containers): the person opens the page
by hand from the printed address, so the site they agree to must be printed too, and its waiting
page must not claim the site opened."""

from __future__ import annotations

import re

import anyio
import httpx
import pytest

from elicitkit.client.handlers.browser import BrowserHandler
from elicitkit.elicitation.requests import UrlRequest

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


async def test_the_agreed_site_is_printed_and_the_waiting_page_links_it() -> None:
    announced: list[str] = []
    handler = BrowserHandler(open_url=lambda url: False, announce=announced.append)
    site = "https://pay.example.com/deposit/42"
    async with handler, httpx.AsyncClient(timeout=5) as http:
        async with anyio.create_task_group() as tg:
            outcome: list[object] = []

            async def ask() -> None:
                outcome.append(await handler(UrlRequest("Pay the deposit", site)))

            tg.start_soon(ask)
            with anyio.fail_after(5):
                while not any("decide in your browser" in line for line in announced):  # noqa: ASYNC110
                    await anyio.sleep(0.02)
            page_url = re.search(r"http://127\.0\.0\.1:\d+/q/\S+", announced[0])
            assert page_url is not None
            page = await http.get(page_url.group(0))
            csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
            assert csrf is not None
            await http.post(page_url.group(0), data={"csrf": csrf.group(1), "action": "open"})
        with anyio.fail_after(5):
            while not any(site in line for line in announced[1:]):  # noqa: ASYNC110 (a list another task fills)
                await anyio.sleep(0.02)
        waiting = await http.get(page_url.group(0) + "?still=1")
    assert any(f"open {site} yourself" in line for line in announced), announced
    assert "It opened in a new tab" not in waiting.text and f'href="{site}"' in waiting.text
