"""The server-page examples over stdio: the loopback pages a stdio server starts on demand.

``api_key_setup.py``: the key asked with ``via="web"`` (the client sees only the link), both
eras; ``bistro_any_host.py``: a client without elicitation books a full evening in two calls, the person
answering the page in between.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from elicitkit import Client
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
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
