"""The server's form pages (one ASGI app, the client's browser form too) under random requests.

Tokens, posted forms, choice and number inputs, concurrent submits, many open pages. Invariants:
every request gets a page with a status below 500 (and no ERROR log); a wrong token never shows
or answers a question; a question gets at most one result, the first, however many posts race;
a choice's answer is one of its options; the number of open pages never passes the cap, and
past it asking fails with a clear error, not a crash.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.from_thread
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from elicitkit.elicitation.errors import ElicitationUnsupported
from elicitkit.server import Server
from elicitkit.server.pages import configure_pages

from ._budget import fuzz_settings

pytestmark = [pytest.mark.timeout(300)]

BASE = "http://pages.test"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "size": {"type": "string", "enum": ["s", "m", "l"]},
        "extras": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2},
        "guests": {"type": "integer", "minimum": 1, "maximum": 12},
        "price": {"type": "number"},
        "name": {"type": "string", "maxLength": 20},
        "ok": {"type": "boolean"},
    },
    "required": ["size"],
}
ACTIONS = ["review", "send", "change", "decline", "cancel", "reveal", "hide", "yes", "no", "open", ""]
NUMBERS = st.sampled_from(
    ["\u00b2", "\u0665", "1_000", "+7", "9" * 5000, "1e999", "nan", "-0", "0x10", " 3 ", "3.", ".5", "1e3"]
)
TEXT = st.one_of(NUMBERS, st.text(max_size=40), st.sampled_from(["s", "m", "l", "a", "b", "1", "2", "3", "S", "M"]))


class Pages:
    """One server's page app on a portal's event loop, driven by httpx over ASGI (no sockets)."""

    def __init__(self, portal: anyio.from_thread.BlockingPortal, max_pages: int = 1000) -> None:
        self.portal = portal
        self.server = Server("fuzz-pages", "1.0")
        self.host = configure_pages(self.server, max_pages=max_pages)
        self.app = self.host.mount("/ask/", BASE)
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url=BASE)
        self.opened = 0

    def open(self, schema: dict[str, Any] = SCHEMA) -> Any:
        self.opened += 1
        question, _ = self.portal.call(self.host.open, f"k{self.opened}", "Fuzz?", schema)
        return question

    def request(
        self, method: str, path: str, data: Any = None, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        async def go() -> httpx.Response:
            if isinstance(data, bytes):  # a body as the fuzzer made it, sent as is
                return await self.http.request(method, path, content=data, headers=headers)
            return await self.http.request(method, path, data=data, headers=headers)

        return self.portal.call(go)


@pytest.fixture(scope="module")
def portal() -> Iterator[anyio.from_thread.BlockingPortal]:
    with anyio.from_thread.start_blocking_portal() as p:
        yield p


@pytest.fixture(scope="module")
def pages(portal: anyio.from_thread.BlockingPortal) -> Pages:
    return Pages(portal)


@pytest.fixture(autouse=True)
def _no_error_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    with caplog.at_level(logging.WARNING):
        yield
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


@fuzz_settings(200)
@given(
    suffix=st.text(max_size=60),
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD"]),
    near=st.booleans(),
)
def test_a_wrong_token_never_shows_or_answers_a_question(pages: Pages, suffix: str, method: str, near: bool) -> None:
    question = pages.open()
    token = question.token[:-1] + suffix if near else suffix
    if token == question.token:
        return
    path = "/ask/" + "".join(ch if ch.isprintable() and ch not in "?#" else "_" for ch in token)
    data = {"csrf": question.csrf, "action": "decline"} if method == "POST" else None
    response = pages.request(method, path, data=data)
    assert response.status_code < 500
    assert response.status_code in (403, 404, 405, 415), response.status_code
    assert question.csrf not in response.text and question.result is None


@fuzz_settings(200)
@given(
    body=st.dictionaries(
        st.sampled_from(["csrf", "action", "review", "confirm", "f0", "f1", "f2", "f3", "f4", "f5", "zz"]),
        st.lists(TEXT, min_size=1, max_size=3),
        max_size=8,
    ),
    right_csrf=st.booleans(),
    action=st.sampled_from(ACTIONS),
    content_type=st.sampled_from(["application/x-www-form-urlencoded", "multipart/form-data", "text/plain", ""]),
)
def test_any_posted_form_gets_a_page_never_a_500(
    pages: Pages, body: dict[str, list[str]], right_csrf: bool, action: str, content_type: str
) -> None:
    question = pages.open()
    if right_csrf:
        body["csrf"] = [question.csrf]
    body["action"] = [action]
    encoded = httpx.QueryParams([(k, v) for k, vs in body.items() for v in vs]).__str__()
    headers = {"Content-Type": content_type} if content_type else {}
    response = pages.request("POST", question.path, data=encoded.encode(), headers=headers)
    assert response.status_code < 500, response.text
    page = pages.request("GET", question.path)
    assert page.status_code in (200, 404) and page.status_code < 500
    if question.result is not None and question.result.accepted:  # only a review's Send or a yes/no sends
        content = question.result.content or {}
        assert content.get("size") in ("s", "m", "l")


@fuzz_settings(200)
@given(size=TEXT, extras=st.lists(TEXT, max_size=3), guests=TEXT, price=TEXT)
def test_choices_and_numbers_are_answers_or_field_errors(
    pages: Pages, size: str, extras: list[str], guests: str, price: str
) -> None:
    question = pages.open()
    form = [("csrf", question.csrf), ("action", "review"), ("f0", size), ("f2", guests), ("f3", price)]
    form += [("f1", e) for e in extras]
    response = pages.request("POST", question.path, data=str(httpx.QueryParams(form)).encode(),
                             headers={"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert response.status_code == 303, response.text
    page = pages.request("GET", question.path)
    assert page.status_code == 200
    if question.stage == "review":
        content = question.content or {}
        assert content["size"] in ("s", "m", "l")
        assert all(e in ("a", "b") for e in content.get("extras", []))
        guests_value = content.get("guests")
        assert guests_value is None or (type(guests_value) is int and 1 <= guests_value <= 12)
        assert guests.strip() == "" or guests.strip().lstrip("-").isascii()
    else:
        assert 'class="error"' in page.text or 'id="summary"' in page.text


@fuzz_settings(60)
@given(
    posts=st.lists(st.sampled_from(["send", "decline", "cancel", "send", "review", "change"]), min_size=2, max_size=8)
)
def test_concurrent_submits_give_one_result_the_first(pages: Pages, posts: list[str]) -> None:
    question = pages.open()
    reviewed = pages.request(
        "POST", question.path, data={"csrf": question.csrf, "action": "review", "f0": "m", "f2": "3"}
    )
    assert reviewed.status_code == 303 and question.stage == "review"
    review_id = question.review_id
    results: list[Any] = []

    async def burst() -> list[int]:
        statuses: list[int] = []

        async def one(action: str) -> None:
            form = {"csrf": question.csrf, "action": action, "review": review_id, "f0": "l", "f2": "4"}
            response = await pages.http.post(question.path, data=form)
            statuses.append(response.status_code)
            results.append(question.result)

        async with anyio.create_task_group() as tg:
            for action in posts:
                tg.start_soon(one, action)
        return statuses

    statuses = pages.portal.call(burst)
    assert all(s < 500 for s in statuses), statuses
    finished = [r for r in results if r is not None]
    assert all(r is finished[0] for r in finished)  # once set, never replaced
    if question.result is not None:
        assert question.done.is_set()
        if question.result.accepted:
            assert question.result.content in ({"size": "m", "guests": 3}, {"size": "l", "guests": 4})


@fuzz_settings(30)
@given(steps=st.lists(st.sampled_from(["open", "open", "answer", "decline"]), min_size=1, max_size=30))
def test_many_open_pages_stay_under_the_cap(portal: anyio.from_thread.BlockingPortal, steps: list[str]) -> None:
    cap = 5
    pages = Pages(portal, max_pages=cap)
    live: list[Any] = []
    for step in steps:
        if step == "open":
            try:
                live.append(pages.open())
            except ElicitationUnsupported as exc:
                assert "its limit" in str(exc)
                assert sum(1 for q in live if q.result is None) >= cap
        elif live:
            question = live.pop(0)
            if question.result is None:
                pages.request("POST", question.path, data={"csrf": question.csrf, "action": "decline"})
                assert question.result is not None
        open_now = sum(1 for q in pages.host.app.questions.values() if q.result is None)
        assert open_now <= cap
    portal.call(pages.host.aclose)
