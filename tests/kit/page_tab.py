"""One person's browser tab on the server's question pages, driven over plain HTTP."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import anyio
import httpx


@dataclass
class Tab:
    """A browser tab: the paths it was shown, in order, and the ones that were its own question's."""

    http: httpx.AsyncClient
    shown: list[str] = field(default_factory=list)
    own: set[str] = field(default_factory=set)

    async def get(self, url: str) -> httpx.Response:
        """GET, following the pages' 303s as a browser does."""
        for _ in range(5):
            response = await self.http.get(url)
            self.shown.append(httpx.URL(url).path)
            if response.status_code != 303:
                return response
            url = str(httpx.URL(url).join(response.headers["location"]))
        raise AssertionError("redirect loop")

    async def answer(self, url: str, value: str) -> None:
        """Fill in the one field, review, send: as a person does, on their own page."""
        self.own.add(httpx.URL(url).path)
        page = await self.get(url)
        assert page.status_code == 200 and 'class="page-form"' in page.text, page.text
        assert "served by the MCP server at" in page.text  # the page says whose it is
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None
        posted = await self.http.post(url, data={"csrf": csrf.group(1), "action": "review", "f0": value})
        assert posted.status_code == 303, posted.text
        review = await self.get(url)
        review_id = re.search(r'name="review" value="([^"]+)"', review.text)
        assert review_id is not None, review.text
        sent = await self.http.post(url, data={"csrf": csrf.group(1), "action": "send", "review": review_id.group(1)})
        assert sent.status_code == 303, sent.text
        done = await self.get(url)
        assert 'data-outcome="sent"' in done.text, done.text

    async def keep_reloading(self, url: str, times: int, gap: float = 0.1) -> None:
        """The finished page reloading itself while others' pages open."""
        for _ in range(times):
            await anyio.sleep(gap)
            await self.get(url)

    def strangers(self) -> list[str]:
        """Pages this tab was shown that were not its own question's."""
        return [path for path in self.shown if path not in self.own]
