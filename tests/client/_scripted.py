"""A scripted HTTP peer for client tests: records every request, answers what the test says.

It is deliberately not an MCP server: an aiohttp app in the test's own event loop whose
``answer(body, headers)`` (written by each test) returns ``(status, json body or None)``, or
``(status, json body or None, response headers)`` to set headers of its own (a session id...).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

MODERN = "2026-07-28"
SERVER_INFO = {"name": "scripted", "version": "0.0.1"}
Answer = Callable[[dict[str, Any], dict[str, str]], tuple[int, Any] | tuple[int, Any, dict[str, str]]]


@dataclass
class Seen:
    method: str  # HTTP method
    headers: dict[str, str]  # lower-cased names
    body: Any = None


@dataclass
class Scripted:
    answer: Answer
    seen: list[Seen] = field(default_factory=list)
    url: str = ""

    def posts(self, method: str | None = None) -> list[Seen]:
        return [
            s
            for s in self.seen
            if s.method == "POST" and (method is None or (isinstance(s.body, dict) and s.body.get("method") == method))
        ]

    def bodies(self, method: str | None = None) -> list[dict[str, Any]]:
        return [s.body for s in self.posts(method)]


def ok(request: dict[str, Any], result: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"jsonrpc": "2.0", "id": request.get("id"), "result": result}


def error(request: dict[str, Any], code: int, message: str, data: Any = None, status: int = 400) -> tuple[int, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return status, {"jsonrpc": "2.0", "id": request.get("id"), "error": err}


def discover_result(versions: list[str] | None = None) -> dict[str, Any]:
    return {
        "resultType": "complete",
        "supportedVersions": versions or [MODERN],
        "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
    }


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


@asynccontextmanager
async def scripted_server(answer: Answer, *, session_header: bool = True) -> AsyncIterator[Scripted]:
    """Serve ``answer`` on 127.0.0.1 (a free port); yields the recorder with its ``url``."""
    state = Scripted(answer)

    async def handle(request: web.Request) -> web.StreamResponse:
        headers = {k.lower(): v for k, v in request.headers.items()}
        if request.method != "POST":
            state.seen.append(Seen(request.method, headers))
            return web.Response(status=405)
        body = await request.json()
        state.seen.append(Seen("POST", headers, body))
        if isinstance(body, dict) and "id" not in body:
            return web.Response(status=202)
        answered = state.answer(body, headers)
        status, payload = answered[0], answered[1]
        extra = {"mcp-session-id": "should-be-ignored"} if session_header else {}
        if len(answered) == 3:
            extra = answered[2]
        if payload is None:
            return web.Response(status=status, text="nope", headers=extra)
        return web.json_response(payload, status=status, headers=extra)

    app = web.Application()
    app.router.add_route("*", "/mcp", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    state.url = f"http://127.0.0.1:{port}/mcp"
    try:
        yield state
    finally:
        await runner.cleanup()
