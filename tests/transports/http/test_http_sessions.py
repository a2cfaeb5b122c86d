"""Legacy session limits (``sessions.py``): an idle session expires with a 404 that says so, a
session waiting on a person never counts as idle, and the number of live sessions is capped."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from elicitkit import Context, Server
from elicitkit.protocol.errors import INVALID_REQUEST
from elicitkit.protocol.framing import SSEParser
from elicitkit.transports.http.asgi import StreamableHTTPHandler
from elicitkit.transports.http.serve import serve_http_background
from kit.raw import ACCEPT_BOTH, RawHTTP, call, init_request, req, tasks_named, wait_until
from support_server import SupportServer

pytestmark = pytest.mark.anyio

IDLE = 0.3  # seconds: expiry happens between IDLE and 1.25 * IDLE (plus a sweep)


def _asking_server() -> Server:
    server = Server("asker")

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Go on?", bool)
        return f"{answer.action}:{answer.data}"

    return server


@asynccontextmanager
async def _served(server: Any, **options: Any) -> AsyncIterator[tuple[str, StreamableHTTPHandler, httpx.AsyncClient]]:
    async with serve_http_background(server, **options) as handle, httpx.AsyncClient(timeout=10) as http:
        assert handle.handler is not None
        yield handle.url, handle.handler, http


async def test_defect_06_idle_session_expires_with_a_clear_404() -> None:
    async with _served(SupportServer(), session_idle_timeout=IDLE) as (url, handler, http):
        raw = RawHTTP(http, url)
        await raw.initialize()
        await raw.assert_ping()
        await wait_until(lambda: raw.session_id not in handler.table.sessions, 5, "the session to expire")

        resp = await raw.post(req(7, "ping"))
        assert resp.status_code == 404
        error = resp.json()["error"]
        assert error["code"] == INVALID_REQUEST
        assert "expired" in error["message"] and "initialize" in error["message"]
        get = await http.get(url, headers=raw.headers(Accept="text/event-stream"))
        assert get.status_code == 404 and "expired" in get.json()["error"]["message"]

        fresh = RawHTTP(http, url)  # a new session, as the spec tells the client to start
        await fresh.initialize()
        await fresh.assert_ping()


async def test_defect_06_requests_keep_a_session_alive() -> None:
    async with _served(SupportServer(), session_idle_timeout=IDLE) as (url, handler, http):
        raw = RawHTTP(http, url)
        await raw.initialize()
        for _ in range(8):  # 1.6 s of traffic, every 0.2 s: never idle for IDLE seconds
            await anyio.sleep(0.2)
            await raw.assert_ping()
        assert raw.session_id in handler.table.sessions


async def test_defect_06_session_waiting_on_a_person_does_not_expire() -> None:
    async with _served(_asking_server(), session_idle_timeout=IDLE) as (url, handler, http):
        raw = RawHTTP(http, url)
        resp = await raw.post(init_request(elicitation={}))  # a client that answers questions
        raw.session_id = resp.headers["mcp-session-id"]
        raw.protocol_version = "2025-11-25"
        await raw.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

        async with http.stream("POST", url, content=json.dumps(call(1, "ask")), headers=raw.headers()) as answer:
            parser = SSEParser()
            question: dict[str, Any] | None = None
            chunks = answer.aiter_raw()
            while question is None:
                for event in parser.feed(await chunks.__anext__()):
                    if event.data:
                        question = json.loads(event.data)
            assert question["method"] == "elicitation/create"

            await anyio.sleep(IDLE * 5)  # the person thinks it over, long past the idle limit
            assert raw.session_id in handler.table.sessions

            reply = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"value": True}}}
            assert (await raw.post(reply)).status_code == 202
            result = None
            while result is None:
                for event in parser.feed(await chunks.__anext__()):
                    if event.data and json.loads(event.data).get("id") == 1:
                        result = json.loads(event.data)
        assert result["result"]["content"][0]["text"] == "accept:True", result
        assert raw.session_id in handler.table.sessions  # idle time counts from the answer, not the call
        await wait_until(lambda: raw.session_id not in handler.table.sessions, 5, "the session to expire once idle")


async def test_defect_06_session_with_an_open_get_stream_does_not_expire() -> None:
    async with _served(SupportServer(), session_idle_timeout=IDLE) as (url, handler, http):
        raw = RawHTTP(http, url)
        await raw.initialize()
        async with http.stream("GET", url, headers=raw.headers(Accept="text/event-stream")) as stream:
            assert stream.status_code == 200
            await anyio.sleep(IDLE * 5)
            assert raw.session_id in handler.table.sessions


async def test_defect_06_session_cap_gives_503_until_one_ends() -> None:
    async with _served(SupportServer(), max_sessions=3) as (url, _handler, http):
        peers = [RawHTTP(http, url) for _ in range(3)]
        for peer in peers:
            await peer.initialize()
        refused = await RawHTTP(http, url).post(init_request("over"))
        assert refused.status_code == 503
        assert refused.json()["id"] == "over"
        assert refused.json()["error"]["code"] == -32000  # JSON-RPC's implementation-defined server error
        assert "too many sessions" in refused.json()["error"]["message"]
        assert int(refused.headers["retry-after"]) >= 1
        for peer in peers:
            await peer.assert_ping()  # the live ones are unaffected

        assert (await peers[0].delete()).status_code == 200
        again = RawHTTP(http, url)
        await again.initialize()
        await again.assert_ping()


async def test_defect_06_cap_makes_room_by_expiring_idle_sessions() -> None:
    async with _served(SupportServer(), max_sessions=2, session_idle_timeout=IDLE) as (url, _handler, http):
        for _ in range(2):
            await RawHTTP(http, url).initialize()
        await anyio.sleep(IDLE * 1.5)
        late = RawHTTP(http, url)
        await late.initialize()
        await late.assert_ping()


async def test_defect_06_many_initializes_leave_no_more_than_the_cap() -> None:
    async with _served(SupportServer(), max_sessions=20) as (url, handler, http):
        statuses = []

        async def one() -> None:
            resp = await http.post(
                url,
                content=json.dumps(init_request()),
                headers={"Accept": ACCEPT_BOTH, "Content-Type": "application/json"},
            )
            statuses.append(resp.status_code)

        async with anyio.create_task_group() as tg:
            for _ in range(60):
                tg.start_soon(one)
        assert sorted(set(statuses)) == [200, 503]
        assert statuses.count(200) == 20
        assert len(handler.table.sessions) == 20


def test_defect_06_limits_have_documented_defaults() -> None:
    from elicitkit.transports.http.sessions import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT

    handler = StreamableHTTPHandler(SupportServer())
    assert handler.table.idle_timeout == DEFAULT_SESSION_IDLE_TIMEOUT == 1800.0
    assert handler.table.max_sessions == DEFAULT_MAX_SESSIONS == 10_000
    unbounded = StreamableHTTPHandler(SupportServer(), session_idle_timeout=None, max_sessions=None)
    assert unbounded.table.idle_timeout is None and unbounded.table.max_sessions is None


async def test_defect_06_many_idle_sessions_all_expire_and_leave_no_task() -> None:
    async with _served(SupportServer(), session_idle_timeout=IDLE) as (url, handler, http):
        baseline = len(tasks_named("_session_main"))
        headers = {"Accept": ACCEPT_BOTH, "Content-Type": "application/json"}
        session_ids = []
        for _ in range(200):
            resp = await http.post(url, content=json.dumps(init_request()), headers=headers)
            assert resp.status_code == 200
            session_ids.append(resp.headers["mcp-session-id"])
        await wait_until(lambda: not handler.table.sessions, 10, "every session to expire")
        await wait_until(lambda: len(tasks_named("_session_main")) == baseline, 5, "their tasks to end")
        for session_id in session_ids[::40]:
            gone = await http.post(
                url, content=json.dumps(req(1, "ping")), headers={**headers, "Mcp-Session-Id": session_id}
            )
            assert gone.status_code == 404 and "expired" in gone.json()["error"]["message"]
