"""The loopback web app on its own (no socket, no browser): tokens, request checks and the form's steps."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from elicitkit.client.handlers.browser.app import MAX_BODY, FormApp, Question
from elicitkit.elicitation.requests import FormRequest, UrlRequest
from elicitkit.elicitation.results import AcceptedElicitation, CancelledElicitation, DeclinedElicitation

pytestmark = pytest.mark.anyio

HOST = "127.0.0.1:5555"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "count": {"type": "integer", "default": 2}},
    "required": ["name"],
}


@pytest.fixture
async def app() -> AsyncIterator[FormApp]:
    app = FormApp()
    app.listening_at(HOST)
    yield app


def client(app: FormApp, host: str = HOST) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=f"http://{host}")


async def post(app: FormApp, q: Question, headers: dict[str, str] | None = None, **form: str) -> httpx.Response:
    async with client(app) as http:
        return await http.post(q.path, data={"csrf": q.csrf, **form}, headers=headers)


async def test_a_question_is_served_at_its_one_time_path_with_the_security_headers(app: FormApp) -> None:
    q = app.open(FormRequest("Who?", SCHEMA))
    async with client(app) as http:
        page = await http.get(q.path)
        assert page.status_code == 200 and 'id="answer"' in page.text
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
        missing = await http.get(q.path + "x")
        assert missing.status_code == 404 and "content-security-policy" in missing.headers
        assert (await http.put(q.path)).status_code == 405
    app.forget(q)
    async with client(app) as http:
        assert (await http.get(q.path)).status_code == 404  # the token died with the question


async def test_requests_to_another_host_or_while_not_listening_are_refused(app: FormApp) -> None:
    q = app.open(FormRequest("Who?", SCHEMA))
    async with client(app, "evil.example:5555") as http:
        assert (await http.get(q.path)).status_code == 403  # DNS rebinding
    app.listening_at("")
    async with client(app) as http:
        assert (await http.get(q.path)).status_code == 403


async def test_forged_posts_are_refused(app: FormApp) -> None:
    q = app.open(FormRequest("Who?", SCHEMA))
    async with client(app) as http:
        no_csrf = await http.post(q.path, data={"action": "decline"})
        assert no_csrf.status_code == 403
        not_a_form = await http.post(q.path, json={"csrf": q.csrf, "action": "decline"})
        assert not_a_form.status_code == 415
        huge = await http.post(q.path, data={"csrf": q.csrf, "action": "review", "f0": "x" * MAX_BODY})
        assert huge.status_code == 413
    assert (await post(app, q, {"Origin": "https://evil.example"}, action="decline")).status_code == 403
    assert (await post(app, q, {"Sec-Fetch-Site": "cross-site"}, action="decline")).status_code == 403
    assert (await post(app, q, action="dance")).status_code == 400
    assert q.result is None and not q.done.is_set()  # none of them answered the question


async def test_review_then_send_and_a_stale_review_is_not_sent(app: FormApp) -> None:
    q = app.open(FormRequest("Who?", SCHEMA))
    refused = await post(app, q, action="review", f0="", f1="x")
    assert refused.status_code == 422 and q.stage == "form" and set(q.errors) == {"name", "count"}
    review = await post(app, q, {"Origin": f"http://{HOST}"}, action="review", f0="Ada", f1="")
    assert review.status_code == 200 and q.stage == "review" and q.content == {"name": "Ada", "count": 2}
    stale = await post(app, q, action="send", review="old")
    assert stale.status_code == 409 and q.result is None
    sent = await post(app, q, action="send", review=q.review_id)
    assert sent.status_code == 200 and 'data-outcome="sent"' in sent.text
    assert isinstance(q.result, AcceptedElicitation) and q.result.content == {"name": "Ada", "count": 2}
    assert q.done.is_set() and q.token not in app.questions


async def test_decline_cancel_and_the_first_result_wins(app: FormApp) -> None:
    q = app.open(FormRequest("Who?", SCHEMA))
    assert (await post(app, q, action="decline")).status_code == 200
    assert isinstance(q.result, DeclinedElicitation)
    app.finish(q, CancelledElicitation())
    assert isinstance(q.result, DeclinedElicitation)


async def test_url_consent(app: FormApp) -> None:
    bad = app.open(UrlRequest("Go", "javascript:alert(1)"))
    assert (await post(app, bad, action="open")).status_code == 400 and bad.result is None
    good = app.open(UrlRequest("Go", "https://pay.example.com/x"))
    opened = await post(app, good, action="open")
    assert opened.status_code == 200 and opened.headers["referrer-policy"] == "no-referrer"
    assert 'http-equiv="refresh" content="0;url=https://pay.example.com/x"' in opened.text
    assert isinstance(good.result, AcceptedElicitation)
