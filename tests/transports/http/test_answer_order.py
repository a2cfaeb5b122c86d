"""A POSTed answer to the server's question: the request it settles writes what comes of it
before the POST's 202 goes out.

Written first, the 202 wakes the client (a segment, a turn on a core) while the tool's next
event, or a gateway's forward of the answer to its backend, still waits: on a busy machine
that wake-up is paid for in the call's latency. The endpoint is driven as an ASGI app here,
every message it sends recorded in order, so the order is the endpoint's own, not a race
between sockets.
"""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest

from elicitkit.transports.http.asgi import StreamableHTTPHandler
from kit.booking import booking_server
from kit.raw import INITIALIZED, call, init_request

pytestmark = pytest.mark.anyio


class _Recorder:
    """Every ASGI message the endpoint sends, tagged with the request it answers, in order."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.seen = anyio.Event()

    def send_for(self, tag: str) -> Any:
        async def send(message: dict[str, Any]) -> None:
            self.sent.append((tag, message))
            self.seen.set()
            self.seen = anyio.Event()

        return send

    def body_of(self, tag: str) -> bytes:
        return b"".join(m.get("body", b"") for t, m in self.sent if t == tag)

    async def until(self, tag: str, marker: bytes) -> None:
        with anyio.fail_after(10):
            while marker not in self.body_of(tag):
                await self.seen.wait()


def _scope(message: dict[str, Any], session_id: str | None) -> tuple[dict[str, Any], Any]:
    body = orjson.dumps(message)
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if session_id is not None:
        headers += [(b"mcp-session-id", session_id.encode()), (b"mcp-protocol-version", b"2025-11-25")]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return scope, receive


async def test_the_answer_s_202_goes_out_after_the_event_it_lets_the_tool_write() -> None:
    handler = StreamableHTTPHandler(booking_server("order"))
    seen = _Recorder()
    async with handler.run(), anyio.create_task_group() as tg:

        async def post(tag: str, message: dict[str, Any], session_id: str | None) -> None:
            scope, receive = _scope(message, session_id)
            await handler(scope, receive, seen.send_for(tag))

        await post("init", init_request(elicitation={"form": {}}), None)
        start = next(m for t, m in seen.sent if t == "init" and m["type"] == "http.response.start")
        session_id = dict(start["headers"])[b"mcp-session-id"].decode()
        await post("initialized", INITIALIZED, session_id)

        tg.start_soon(post, "call", call("c1", "book", date="d1"), session_id)
        await seen.until("call", b"elicitation/create")
        body = seen.body_of("call")
        at = body.find(b"elicitation/create")
        data = body.rfind(b"data: ", 0, at) + len(b"data: ")
        question = orjson.loads(body[data : body.find(b"\n", at)])
        content = {"name": "Ada", "party_size": 2}
        answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": content}}
        await post("answer", answer, session_id)
        await seen.until("call", b"booked 2 for Ada on d1")
        tg.cancel_scope.cancel()

    answer_sent = [m for t, m in seen.sent if t == "answer"]
    assert answer_sent[0]["type"] == "http.response.start" and answer_sent[0]["status"] == 202
    result = next(i for i, (t, m) in enumerate(seen.sent) if t == "call" and b"booked 2" in m.get("body", b""))
    first_answer = next(i for i, (t, _m) in enumerate(seen.sent) if t == "answer")
    assert result < first_answer, [(t, m["type"], m.get("body", b"")[:40]) for t, m in seen.sent]
