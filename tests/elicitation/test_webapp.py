"""The loopback web app on its own (no socket, no browser): tokens, request checks and the form's steps."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from elicitkit.elicitation.requests import FormRequest, UrlRequest
from elicitkit.elicitation.results import AcceptedElicitation, CancelledElicitation, DeclinedElicitation
from elicitkit.elicitation.webapp import MAX_BODY, FormApp, Question

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


async def get(app: FormApp, path: str) -> httpx.Response:
    async with client(app) as http:
        return await http.get(path)


async def test_review_then_send_and_a_stale_review_is_not_sent(app: FormApp) -> None:
    """Every POST is answered 303 See Other to the question's page (PRG); the GET shows the step it is at."""
    q = app.open(FormRequest("Who?", SCHEMA))
    refused = await post(app, q, action="review", f0="", f1="x")
    assert refused.status_code == 303 and refused.headers["location"] == q.path
    assert "content-security-policy" in refused.headers
    assert q.stage == "form" and set(q.errors) == {"name", "count"}
    page = await get(app, q.path)
    assert page.status_code == 200 and 'id="summary"' in page.text and "autofocus" in page.text
    assert (await get(app, q.path)).text == page.text  # Reload shows the same errors, resends nothing
    review = await post(app, q, {"Origin": f"http://{HOST}"}, action="review", f0="Ada", f1="")
    assert review.status_code == 303 and q.stage == "review" and q.content == {"name": "Ada", "count": 2}
    assert q.defaulted == {"count"}
    shown = (await get(app, q.path)).text
    assert "Check your answers" in shown and '<bdi>2</bdi> <span class="default">(default)</span>' in shown
    stale = await post(app, q, action="send", review="old")
    assert stale.status_code == 303 and q.result is None
    assert "changed since that review page" in (await get(app, q.path)).text
    sent = await post(app, q, action="send", review=q.review_id)
    assert sent.status_code == 303 and sent.headers["location"] == q.path
    assert isinstance(q.result, AcceptedElicitation) and q.result.content == {"name": "Ada", "count": 2}
    assert q.done.is_set() and q.token not in app.questions
    after = await get(app, q.path)  # Back or Reload after sending: the outcome, not the form
    assert (
        after.status_code == 200 and 'data-outcome="sent"' in after.text and "<title>Answer sent</title>" in after.text
    )
    late = await post(app, q, action="decline")  # a closed question takes no more answers: it says so
    assert late.status_code == 303 and q.result is not None and q.result.action.value == "accept"
    assert 'id="already"' in (await get(app, q.path)).text


async def test_decline_cancel_and_the_first_result_wins(app: FormApp) -> None:
    q = app.open(FormRequest("Who?", SCHEMA))
    assert (await post(app, q, action="decline")).status_code == 303
    assert isinstance(q.result, DeclinedElicitation)
    assert "<title>Declined</title>" in (await get(app, q.path)).text
    app.finish(q, CancelledElicitation())
    assert isinstance(q.result, DeclinedElicitation)
    c = app.open(FormRequest("Who?", SCHEMA))
    await post(app, c, action="cancel")
    assert "<title>Cancelled</title>" in (await get(app, c.path)).text


async def test_a_yes_no_question_is_one_click(app: FormApp) -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean", "title": "Delete it?"}}, "required": ["ok"]}
    q = app.open(FormRequest("Sure?", schema))
    page = (await get(app, q.path)).text
    assert 'value="yes"' in page and 'value="no"' in page and 'value="review"' not in page
    assert (await post(app, q, action="no")).status_code == 303
    assert isinstance(q.result, AcceptedElicitation) and q.result.content == {"ok": False}


async def test_the_next_question_from_the_same_server_follows_in_the_same_page(app: FormApp) -> None:
    first = app.open(FormRequest("First?", SCHEMA))
    await post(app, first, action="decline")
    following = await get(app, first.path)
    assert following.headers["refresh"] == "2" and "another question" in following.text
    second = app.open(FormRequest("Second?", SCHEMA))
    assert second.step == 2 and second.follows and not second.claimed.is_set()  # its page was just served
    moved = await get(app, first.path)
    assert moved.status_code == 303 and moved.headers["location"] == second.path
    shown = (await get(app, second.path)).text
    assert second.claimed.is_set() and 'id="step"' in shown and "Question 2" in shown


async def test_a_withdrawn_question_is_gone(app: FormApp) -> None:
    q = app.open(FormRequest("Who?", SCHEMA))
    app.finish(q, CancelledElicitation())  # the client ended it (timeout, aclose), not the person
    app.forget(q)
    assert (await get(app, q.path)).status_code == 404


async def test_url_consent(app: FormApp) -> None:
    bad = app.open(UrlRequest("Go", "javascript:alert(1)"))
    assert (await post(app, bad, action="open")).status_code == 400 and bad.result is None
    good = app.open(UrlRequest("Go", "https://pay.example.com/x"))
    opened = await post(app, good, action="open")
    assert opened.status_code == 303 and opened.headers["location"] == good.path
    assert isinstance(good.result, AcceptedElicitation)
    waiting = await get(app, good.path)  # the tab now waits for the completion, updating itself
    assert 'data-state="waiting"' in waiting.text and waiting.headers["refresh"] == "2"
    assert "<meta http-equiv" not in waiting.text and 'href="?still=1"' in waiting.text
    assert 'rel="noreferrer noopener"' in waiting.text and 'href="https://pay.example.com/x"' in waiting.text
    still = await get(app, good.path + "?still=1")  # the person can stop the updates
    assert "refresh" not in still.headers and 'data-state="waiting"' in still.text
    good.wait_state = "completed"
    done = await get(app, good.path)
    assert 'data-state="completed"' in done.text and "refresh" not in done.headers


async def test_a_look_alike_domain_opens_only_when_its_real_name_is_typed(app: FormApp) -> None:
    q = app.open(UrlRequest("Pay", "https://xn--pple-43d.com/pay"))
    page = (await get(app, q.path)).text
    assert 'id="stop"' in page and "CYRILLIC SMALL LETTER A" in page and "Letter 1, “\u0430”" in page
    assert 'class="primary" name="action" value="decline"' in page and 'class="danger"' in page
    assert (await post(app, q, action="open")).status_code == 303 and q.result is None
    assert (await post(app, q, action="open", confirm="apple.com")).status_code == 303 and q.result is None
    assert "Nothing was opened" in (await get(app, q.path)).text
    opened = await post(app, q, action="open", confirm=" XN--PPLE-43D.COM ")
    assert opened.headers["location"] == q.path and isinstance(q.result, AcceptedElicitation)


async def test_a_mounted_app_serves_under_its_prefix_answers_its_hosts_and_wants_its_own_origin() -> None:
    """The server's pages: a path prefix beside /mcp, a Host rule, the POST's Origin its own."""
    app = FormApp(prefix="/mcp/ask/", allow_host={"srv.example:8443"}.__contains__)
    q = app.open(FormRequest("Who?", SCHEMA))
    assert q.path == f"/mcp/ask/{q.token}"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://srv.example:8443") as http:
        assert (await http.get(q.path)).status_code == 200
        assert (await http.get(f"/q/{q.token}")).status_code == 404  # only under its prefix
        cross = {"Origin": "https://other.example"}
        assert (await http.post(q.path, data={"csrf": q.csrf, "action": "decline"}, headers=cross)).status_code == 403
        own = {"Origin": "https://srv.example:8443"}
        assert (await http.post(q.path, data={"csrf": q.csrf, "action": "decline"}, headers=own)).status_code == 303
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://evil.example") as http:
        assert (await http.get(q.path)).status_code == 403
    assert isinstance(q.result, DeclinedElicitation)


async def test_an_expired_question_is_refused_like_an_unknown_one(app: FormApp) -> None:
    q = app.open(FormRequest("Who?", SCHEMA), expires_in=0.0)
    async with client(app) as http:
        assert (await http.get(q.path)).status_code == 404
    assert (await post(app, q, action="decline")).status_code == 404
    assert q.result is None
