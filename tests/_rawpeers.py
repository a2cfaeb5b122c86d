"""Raw protocol peers for the transport tests: bytes in, dicts out, no elicitkit client in between.

``StdioChild`` spawns ``tests/support_server.py`` and talks newline-delimited JSON to its
stdin/stdout; ``RawHTTP`` speaks Streamable HTTP with httpx. Both keep the checks explicit so a
test can send exactly the bytes it wants and see exactly what came back.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
from anyio.abc import Process

from elicitkit.protocol.framing import LineFramer, SSEEvent, SSEParser
from kit.processes import stop_child

TESTS = Path(__file__).resolve().parent
SERVER_SCRIPT = TESTS / "support_server.py"


def init_request(request_id: Any = "init", version: str = "2025-11-25", **caps: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": caps, "clientInfo": {"name": "raw", "version": "0"}},
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def req(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def call(request_id: Any, tool: str, meta: dict[str, Any] | None = None, **arguments: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return req(request_id, "tools/call", params)


def tasks_named(fragment: str) -> list[asyncio.Task[Any]]:
    """Live asyncio tasks of this loop whose (anyio-assigned, qualified) name contains ``fragment``."""
    return [t for t in asyncio.all_tasks() if fragment in t.get_name() and not t.done()]


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Poll ``predicate`` (the state it watches has no event to wait on)."""
    with anyio.move_on_after(timeout):
        while not predicate():  # noqa: ASYNC110
            await anyio.sleep(0.01)
    assert predicate(), f"timed out waiting for {what}"


# ----------------------------------------------------------------------------- stdio

_spawned = itertools.count()


class StdioChild:
    """A spawned ``support_server.py`` speaking newline-delimited JSON."""

    def __init__(self, process: Process, stderr_path: Path) -> None:
        self.process = process
        self.stderr_path = stderr_path
        self._framer = LineFramer(64 * 1024 * 1024)
        self._frames: deque[bytes] = deque()
        self._sync = 0

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    async def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def send(self, obj: Any) -> None:
        await self.write(orjson.dumps(obj) + b"\n")

    async def recv(self, timeout: float = 5.0) -> Any:
        assert self.process.stdout is not None
        with anyio.fail_after(timeout):
            while not self._frames:
                chunk = await self.process.stdout.receive()
                for frame in self._framer.feed(chunk):
                    assert isinstance(frame, bytes), frame
                    self._frames.append(frame)
        return orjson.loads(self._frames.popleft())

    async def request(self, obj: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        """Send a request; the next message must be its answer."""
        await self.send(obj)
        answer = await self.recv(timeout)
        assert answer.get("id") == obj["id"] and "method" not in answer, answer
        return answer  # type: ignore[no-any-return]

    async def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        answer = await self.request(init_request(version=version))
        await self.send(INITIALIZED)
        return answer

    async def assert_ping(self, request_id: Any = "ping") -> None:
        assert await self.request(req(request_id, "ping")) == {"jsonrpc": "2.0", "id": request_id, "result": {}}

    async def stats(self, request_id: Any = "stats") -> dict[str, Any]:
        answer = await self.request(call(request_id, "stats"))
        return answer["result"]["structuredContent"]  # type: ignore[no-any-return]

    async def sync(self) -> None:
        """Skip whatever an earlier exchange left unread: ping, then read up to its answer."""
        self._sync += 1
        marker = f"sync-{self._sync}"
        await self.send(req(marker, "ping"))
        while (await self.recv()).get("id") != marker:
            pass

    async def wait_for_stderr(self, text: str, timeout: float = 5.0) -> None:
        await wait_until(lambda: text in self.stderr, timeout, f"{text!r} on the server's stderr")


@asynccontextmanager
async def spawn_stdio(tmp_path: Path, *args: str) -> AsyncIterator[StdioChild]:
    stderr_path = tmp_path / f"stderr-{next(_spawned)}.txt"
    with stderr_path.open("wb") as stderr:
        process = await anyio.open_process(
            [sys.executable, str(SERVER_SCRIPT), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
    child = StdioChild(process, stderr_path)
    try:
        yield child
    finally:
        await stop_child(process)


# ----------------------------------------------------------------------------- HTTP


ACCEPT_BOTH = "application/json, text/event-stream"


class RawHTTP:
    """One Streamable HTTP session, driven with raw httpx requests."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.session_id: str | None = None
        self.protocol_version: str | None = None

    def headers(self, **extra: str) -> dict[str, str]:
        headers = {"Accept": ACCEPT_BOTH, "Content-Type": "application/json"}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        headers.update(extra)
        return headers

    async def post(self, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
        content = body if isinstance(body, bytes) else orjson.dumps(body)
        headers = headers if headers is not None else self.headers()
        return await self.http.post(self.url, content=content, headers=headers)

    async def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        resp = await self.post(init_request(version=version))
        assert resp.status_code == 200, resp.text
        self.session_id = resp.headers["mcp-session-id"]
        self.protocol_version = resp.json()["result"]["protocolVersion"]
        note = await self.post(INITIALIZED)
        assert note.status_code == 202
        return resp.json()  # type: ignore[no-any-return]

    async def request(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A request answered with plain JSON (tools that send nothing before their result)."""
        resp = await self.post(obj)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        assert resp.headers["content-type"].startswith("application/json")
        return resp.json()  # type: ignore[no-any-return]

    async def assert_ping(self, request_id: Any = "ping") -> None:
        assert await self.request(req(request_id, "ping")) == {"jsonrpc": "2.0", "id": request_id, "result": {}}

    async def delete(self) -> httpx.Response:
        return await self.http.delete(self.url, headers=self.headers())


async def read_sse(response: httpx.Response, until: Callable[[list[SSEEvent]], bool]) -> list[SSEEvent]:
    """Read SSE events from a streamed httpx response until ``until(events)`` is true."""
    parser = SSEParser()
    events: list[SSEEvent] = []
    async for chunk in response.aiter_raw():
        events += parser.feed(chunk)
        if until(events):
            return events
    return events


def messages(events: list[SSEEvent]) -> list[dict[str, Any]]:
    return [orjson.loads(e.data) for e in events if e.data]
