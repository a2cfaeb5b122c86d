"""A client that drops its HTTP connection (the POST's SSE stream) while a question is pending.

2025-11-25 (transport spec): a disconnect is not a cancellation. The request keeps running, the
stream's events carry ids (a priming event first), and the client may come back with
``GET`` + ``Last-Event-ID`` to read the rest, or simply POST its answer. To end the request it
cancels explicitly (``notifications/cancelled``) or ends the session (``DELETE``); then the
tool sees cancellation. 2026-07-28: closing the stream *is* the cancellation.
Each variant runs many times on one server, which must come back to its baseline.
"""

from __future__ import annotations

import anyio
import httpx
import orjson
import pytest

from kit.raw import call, headers_for, meta

from ._support import (
    Figures,
    HttpSession,
    accept,
    assert_back_to,
    fresh_http,
    resumed,
    settle,
    streamed_call,
)

pytestmark = pytest.mark.anyio

ROUNDS = 20


async def _baseline(session: HttpSession) -> Figures:
    await session.tool("o-base", "outcomes")
    return Figures.of(await session.tool("d-base", "diag"))


async def _settled(session: HttpSession, baseline: Figures, what: str) -> None:
    after = await settle(lambda: session.tool("d-after", "diag"), baseline)
    assert_back_to(after, baseline, what)


async def test_dropped_stream_resumed_with_last_event_id_then_answered(url: str) -> None:
    """Drop after the question arrived; GET from the priming event's id replays the question,
    the answer reaches the tool once, and the result comes on the resumed stream."""
    async with fresh_http() as http:
        session = await HttpSession(http, url).open()
        await _drop_resume_answer(session, "warm")
        baseline = await _baseline(session)
        for i in range(ROUNDS):
            await _drop_resume_answer(session, f"resumed-{i}", value=i)
        assert await session.tool("o", "outcomes") == {f"resumed-{i}": [f"accept:{i}"] for i in range(ROUNDS)}
        await _settled(session, baseline, f"{ROUNDS} dropped and resumed calls")


async def _drop_resume_answer(session: HttpSession, tag: str, value: int = 0) -> None:
    async with streamed_call(session, f"c-{tag}", "ask", tag=tag) as events:
        priming_id, priming = await events.next_event()
        assert priming is None and priming_id is not None  # 2025-11-25: an id before anything else
        question = await events.next_message()
        assert question["method"] == "elicitation/create"
    async with resumed(session, priming_id) as events:  # the connection above is gone
        assert await events.next_message() == question  # replayed, same id
        await session.answer(question["id"], accept(value))
        rest = await events.until_closed()
    assert rest == [
        {"jsonrpc": "2.0", "id": f"c-{tag}", "result": {"content": [{"type": "text", "text": f"accept:{value}"}]}}
    ]


async def test_dropped_stream_answered_without_reconnecting(url: str) -> None:
    """The answer may be POSTed without reconnecting; the result then waits (for the retention
    period) for a GET from the last event seen."""
    async with fresh_http() as http:
        session = await HttpSession(http, url).open()
        baseline = await _baseline(session)
        for i in range(ROUNDS):
            tag = f"unresumed-{i}"
            async with streamed_call(session, f"c-{tag}", "ask", tag=tag) as events:
                question = await events.next_message()
                last_seen = events.last_id
            assert last_seen is not None
            await session.answer(question["id"], accept(i))
            async with resumed(session, last_seen) as events:
                rest = await events.until_closed()
            assert [m.get("result") for m in rest] == [{"content": [{"type": "text", "text": f"accept:{i}"}]}]
        assert await session.tool("o", "outcomes") == {f"unresumed-{i}": [f"accept:{i}"] for i in range(ROUNDS)}
        await _settled(session, baseline, f"{ROUNDS} calls answered after a drop")


async def test_dropped_stream_then_cancelled(url: str) -> None:
    """Drop, then ``notifications/cancelled`` for the call: the tool sees CancelledError once."""
    async with fresh_http() as http:
        session = await HttpSession(http, url).open()
        baseline = await _baseline(session)
        for i in range(ROUNDS):
            tag = f"cancelled-{i}"
            async with streamed_call(session, f"c-{tag}", "ask", tag=tag) as events:
                await events.next_message()
            note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": f"c-{tag}"}}
            assert (await session.post(note)).status_code == 202
        await session.ping("after-cancels")
        await _settled(session, baseline, f"{ROUNDS} dropped and cancelled calls")
        assert await session.tool("o", "outcomes") == {f"cancelled-{i}": ["cancelled"] for i in range(ROUNDS)}


async def test_dropped_stream_then_session_deleted(url: str) -> None:
    """Drop, then DELETE the session: the tool sees CancelledError once; the session is gone."""
    async with fresh_http() as http:
        watcher = await HttpSession(http, url).open()
        baseline = await _baseline(watcher)
        for i in range(ROUNDS):
            tag = f"deleted-{i}"
            session = await HttpSession(http, url).open()
            async with streamed_call(session, f"c-{tag}", "ask", tag=tag) as events:
                await events.next_message()
            assert (await session.delete()).status_code == 200
            assert (await session.post(call("after", "diag"))).status_code == 404
        await _settled(watcher, baseline, f"{ROUNDS} sessions deleted after a drop")
        assert await watcher.tool("o", "outcomes") == {f"deleted-{i}": ["cancelled"] for i in range(ROUNDS)}


async def test_modern_dropped_stream_cancels_the_call(url: str) -> None:
    """2026-07-28: closing the connection of a running call cancels it (exactly once)."""
    async with fresh_http() as http:
        watcher = await HttpSession(http, url).open()
        await _drop_modern(http, url, "modern-warm")  # the first 2026 request starts the server's stateless session
        baseline = await _baseline(watcher)
        async with anyio.create_task_group() as tg:
            for i in range(ROUNDS):
                tg.start_soon(_drop_modern, http, url, f"modern-{i}")
        await _settled(watcher, baseline, f"{ROUNDS} 2026 calls dropped")
        assert await watcher.tool("o", "outcomes") == {f"modern-{i}": ["cancelled"] for i in range(ROUNDS)}


async def _drop_modern(http: httpx.AsyncClient, url: str, tag: str) -> None:
    params = {"name": "slow", "arguments": {"tag": tag, "seconds": 60}, "_meta": meta()}
    message = {"jsonrpc": "2.0", "id": tag, "method": "tools/call", "params": params}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    headers.update(headers_for("tools/call", params))
    with anyio.move_on_after(0.5):  # no answer will come: giving up closes the connection
        await http.post(url, content=orjson.dumps(message), headers=headers)
        raise AssertionError("the slow call answered")
