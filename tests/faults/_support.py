"""What the fault tests share: ``fault_server.py`` over stdio and HTTP, raw peers, baselines.

Everything talks to the server the way a client on the wire would: newline-delimited JSON on a
child's pipes (:class:`kit.raw.StdioPeer`), raw Streamable HTTP with httpx, or a real
:class:`elicitkit.Client`. No private server or client module is imported here.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson

from elicitkit.protocol.framing import SSEParser
from kit.processes import serve_on_free_port
from kit.raw import INITIALIZED, RawHTTP, StdioChild, call, init_request, spawn_stdio

HERE = Path(__file__).resolve().parent
SERVER = HERE / "fault_server.py"
DYING_CLIENT = HERE / "dying_client.py"
ELICITING = {"elicitation": {"form": {}}}

# Allowed growth of the server's traced memory after a run of faults (bytes). A leaked
# session costs 7-10 kB and a leaked parked call a few kB, so 50 iterations of either exceed it.
MEMORY_TOLERANCE = 96 * 1024


def server_env(outcomes: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "FAULTS_TRACEMALLOC": "1"}
    if outcomes is not None:
        env["FAULTS_OUTCOMES"] = str(outcomes)
    return env


def read_outcome_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def tool_value(result: dict[str, Any]) -> Any:
    """A ``CallToolResult``'s value: its structured content, unwrapped."""
    assert not result.get("isError"), result
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        return structured["result"] if set(structured) == {"result"} else structured
    return result["content"][0]["text"]


def ask_text(tag: str) -> str:
    return f"Pick a number for {tag}"


def tag_of(elicitation: dict[str, Any]) -> str:
    message: str = elicitation["params"]["message"]
    return message.removeprefix("Pick a number for ")


def accept(value: int) -> dict[str, Any]:
    return {"action": "accept", "content": {"value": value}}


# ----------------------------------------------------------------------------- stdio


@contextlib.asynccontextmanager
async def stdio_server(tmp_path: Path, outcomes: Path | None = None) -> AsyncIterator[StdioChild]:
    """``fault_server.py stdio`` with raw pipes, initialized (2025-11-25, form elicitation)."""
    async with spawn_stdio(tmp_path, "stdio", script=SERVER, env=server_env(outcomes)) as child:
        answer = await child.request(init_request(version="2025-11-25", **ELICITING), timeout=30)
        assert "result" in answer, answer
        await child.send(INITIALIZED)
        yield child


async def stdio_tool(child: StdioChild, request_id: str, tool: str, **arguments: Any) -> Any:
    """A tool that answers at once, read past anything else the server says meanwhile."""
    await child.send(call(request_id, tool, **arguments))
    with anyio.fail_after(10):
        while True:
            message = await child.recv(10)
            if message.get("id") == request_id and "method" not in message:
                return tool_value(message["result"])


# ----------------------------------------------------------------------------- HTTP


@contextlib.contextmanager
def http_server(outcomes: Path | None = None, idle_timeout: float | None = None) -> Iterator[str]:
    """``fault_server.py http PORT [IDLE]`` on a free port; yields its MCP URL. ``idle_timeout``:
    its legacy sessions expire after that many idle seconds (default: the server's 30 minutes)."""
    idle = [] if idle_timeout is None else [str(idle_timeout)]
    argv = lambda port: [sys.executable, str(SERVER), "http", str(port), *idle]  # noqa: E731
    with serve_on_free_port(argv, "fault_server.py", env=server_env(outcomes)) as (port, _proc, _log):
        yield f"http://127.0.0.1:{port}/mcp"


class HttpSession(RawHTTP):
    """One legacy Streamable HTTP session of a form-eliciting client, spoken with raw httpx requests."""

    def __init__(self, http: httpx.AsyncClient, url: str, version: str = "2025-11-25") -> None:
        super().__init__(http, url)
        self.version = version

    async def open(self) -> HttpSession:
        await self.initialize(self.version, ELICITING)
        return self

    async def tool(self, request_id: str, tool: str, **arguments: Any) -> Any:
        """A tool that answers at once (JSON, or SSE holding only its response)."""
        resp = await self.post(call(request_id, tool, **arguments))
        assert resp.status_code == 200, resp.text
        if resp.headers["content-type"].startswith("application/json"):
            return tool_value(resp.json()["result"])
        for event in SSEParser().feed(resp.content):
            if event.data:
                message = orjson.loads(event.data)
                if message.get("id") == request_id:
                    return tool_value(message["result"])
        raise AssertionError(resp.text)


class SSEReader:
    """The events of one streamed response, message by message (ids kept)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._chunks = response.aiter_raw()
        self._parser = SSEParser()
        self._pending: list[tuple[str | None, dict[str, Any] | None]] = []
        self.last_id: str | None = None

    async def next_event(self, timeout: float = 10.0) -> tuple[str | None, dict[str, Any] | None]:
        """(event id, message or None for an empty priming event)."""
        with anyio.fail_after(timeout):
            while not self._pending:
                chunk = await self._chunks.__anext__()
                for event in self._parser.feed(chunk):
                    message = orjson.loads(event.data) if event.data else None
                    self._pending.append((event.id, message))
        event_id, message = self._pending.pop(0)
        if event_id is not None:
            self.last_id = event_id
        return event_id, message

    async def next_message(self, timeout: float = 10.0) -> dict[str, Any]:
        while True:
            _, message = await self.next_event(timeout)
            if message is not None:
                return message

    async def until_closed(self, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Every remaining message, up to the end of the response."""
        out: list[dict[str, Any]] = []
        with anyio.fail_after(timeout):
            while True:
                try:
                    _, message = await self.next_event(timeout)
                except StopAsyncIteration:
                    return out
                if message is not None:
                    out.append(message)


@contextlib.asynccontextmanager
async def streamed_call(session: HttpSession, request_id: str, tool: str, **arguments: Any) -> AsyncIterator[SSEReader]:
    """POST a call whose answer streams; leaving the block early drops the connection."""
    request = session.http.build_request(
        "POST", session.url, content=orjson.dumps(call(request_id, tool, **arguments)), headers=session.headers()
    )
    response = await session.http.send(request, stream=True)
    try:
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"].startswith("text/event-stream"), response.headers
        yield SSEReader(response)
    finally:
        await response.aclose()


@contextlib.asynccontextmanager
async def resumed(session: HttpSession, last_event_id: str) -> AsyncIterator[SSEReader]:
    """GET with ``Last-Event-ID``: the rest of a dropped request stream."""
    headers = session.headers(**{"Last-Event-ID": last_event_id})
    del headers["Content-Type"]
    headers["Accept"] = "text/event-stream"
    request = session.http.build_request("GET", session.url, headers=headers)
    response = await session.http.send(request, stream=True)
    try:
        assert response.status_code == 200, (response.status_code, await response.aread())
        yield SSEReader(response)
    finally:
        await response.aclose()


def fresh_http() -> httpx.AsyncClient:
    """An httpx client with no connection cap (hundreds of calls may be parked at once)."""
    return httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=None, max_keepalive_connections=20))


# ----------------------------------------------------------------------------- baselines


@dataclass
class Figures:
    tasks: int
    sessions: int
    traced: int
    rss: int

    @classmethod
    def of(cls, value: dict[str, Any]) -> Figures:
        return cls(value["tasks"], value["sessions"], value["traced"], value["rss"])


async def settle(read: Any, baseline: Figures, timeout: float = 10.0, extra_sessions: int = 0) -> Figures:
    """Poll the server's figures until its tasks and sessions are back to ``baseline`` (or time out).

    ``extra_sessions``: sessions known to stay (with their tasks, ``per_session`` each, measured
    by the caller and folded into ``baseline`` beforehand).
    """
    figures = Figures.of(await read())
    with anyio.move_on_after(timeout):
        while figures.tasks > baseline.tasks or figures.sessions > baseline.sessions + extra_sessions:
            await anyio.sleep(0.1)
            figures = Figures.of(await read())
    return figures


def assert_back_to(figures: Figures, baseline: Figures, what: str) -> None:
    # At most the baseline: idle sessions of earlier tests (and their tasks) may expire meanwhile.
    assert figures.sessions <= baseline.sessions, f"{what}: {figures.sessions - baseline.sessions} sessions left"
    assert figures.tasks <= baseline.tasks, f"{what}: {figures.tasks - baseline.tasks} tasks left behind"
    growth = figures.traced - baseline.traced
    assert growth < MEMORY_TOLERANCE, f"{what}: traced memory grew by {growth} bytes"
