"""Raw 2026-07-28 clients for the server tests: JSON-RPC dicts in, replies out, nothing smoothed over.

``MemoryWire`` feeds a :class:`~elicitkit.server.session.ServerSession` in this process (as the
in-memory transport does); ``HttpWire`` POSTs with httpx to a Streamable HTTP endpoint and keeps
the status code. Both give :class:`Reply` objects, so one test body runs on either. ``Modern``
adds the envelope, the 2026 headers and the retry parameters on top.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson

from elicitkit.protocol.jsonrpc import JSON, RequestId, encode
from elicitkit.server.lowlevel import LowLevelServer

V2026 = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
ALL_CAPS: dict[str, Any] = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}
NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
SCRIPT = Path(__file__).resolve().parent / "modern_server.py"
ACCEPT = "application/json, text/event-stream"

_ids = itertools.count(1)


def meta(
    version: str = V2026, caps: dict[str, Any] | None = None, info: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """A request envelope: version, capabilities (all by default) and client info."""
    out: dict[str, Any] = {
        META_VERSION: version,
        META_CAPS: ALL_CAPS if caps is None else caps,
        META_INFO: {"name": "raw-2026", "version": "0"} if info is None else info,
    }
    out.update(extra)
    return out


def headers_for(method: str, params: dict[str, Any] | None, version: str = V2026) -> dict[str, str]:
    """The headers a 2026 POST carries (our tests only use plain ASCII names)."""
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    key = NAME_PARAM.get(method)
    if key is not None and params is not None and isinstance(params.get(key), str):
        headers["Mcp-Name"] = params[key]
    return headers


@dataclass
class Reply:
    """One JSON-RPC answer, with its HTTP status and headers when it came over HTTP."""

    body: dict[str, Any]
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.body, self.body
        return self.body["result"]  # type: ignore[no-any-return]

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.body, self.body
        return self.body["error"]  # type: ignore[no-any-return]

    @property
    def text(self) -> str:
        return "\n".join(block["text"] for block in self.result["content"] if block.get("type") == "text")

    def expect_status(self, status: int) -> Reply:
        if self.status is not None:
            assert self.status == status, (self.status, self.body)
        return self


class Wire:
    """Sends one request (a full JSON-RPC dict) and returns its answer."""

    kind = "?"

    async def send(self, message: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
        raise NotImplementedError


class MemoryWire(Wire):
    """A server session in this process; every outgoing message is kept in ``outgoing``."""

    kind = "memory"

    def __init__(self, server: LowLevelServer) -> None:
        self._out, self._in = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        self.session = server.create_session(self._deliver)
        self.outgoing: list[dict[str, Any]] = []
        self._waiting: dict[RequestId, dict[str, Any]] = {}

    async def _deliver(self, message: JSON, related: RequestId | None) -> None:
        decoded = orjson.loads(encode(message))
        self.outgoing.append(decoded)
        await self._out.send(decoded)

    async def send(self, message: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
        await self.session.peer.feed(orjson.dumps(message))
        with anyio.fail_after(5):
            while message["id"] not in self._waiting:
                got = await self._in.receive()
                if "id" in got and "method" not in got:
                    self._waiting[got["id"]] = got
        return Reply(self._waiting.pop(message["id"]))


class HttpWire(Wire):
    """POSTs to a Streamable HTTP endpoint; JSON or SSE answers, the status kept."""

    kind = "http"

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client = client
        self.url = url

    async def send(self, message: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
        all_headers = {"Accept": ACCEPT, "Content-Type": "application/json", **(headers or {})}
        response = await self.client.post(self.url, content=orjson.dumps(message), headers=all_headers)
        return reply_of(response, message.get("id"))


def reply_of(response: httpx.Response, request_id: Any) -> Reply:
    content_type = response.headers.get("content-type", "")
    kept = {k.lower(): v for k, v in response.headers.items()}
    if content_type.startswith("application/json"):
        return Reply(response.json(), response.status_code, kept)
    assert content_type.startswith("text/event-stream"), (response.status_code, content_type, response.text)
    for event in sse_data(response.text):
        if event.get("id") == request_id and "method" not in event:
            return Reply(event, response.status_code, kept)
    raise AssertionError(f"no answer to {request_id!r} in the SSE body: {response.text!r}")


def sse_data(text: str) -> Iterator[dict[str, Any]]:
    """The JSON ``data:`` of each event of an SSE body (one data line per event here)."""
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            yield orjson.loads(line[5:].strip())


class Modern:
    """A 2026 client by hand: envelope in ``_meta``, headers over HTTP, retries with state."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire

    @property
    def http(self) -> bool:
        return self.wire.kind == "http"

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        envelope: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        request_id: Any = None,
    ) -> Reply:
        """``params`` with the envelope (``meta()`` unless given) and the matching headers."""
        full = dict(params or {})
        full["_meta"] = meta() if envelope is None else envelope
        version = full["_meta"].get(META_VERSION, V2026) if isinstance(full["_meta"], dict) else V2026
        sent_headers = headers_for(method, full, version) if headers is None else headers
        message = {"jsonrpc": "2.0", "id": request_id if request_id is not None else next(_ids), "method": method}
        message["params"] = full
        reply = await self.wire.send(message, sent_headers)
        assert reply.body.get("id") == message["id"], reply.body  # every answer echoes its id
        return reply

    async def raw(self, message: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
        return await self.wire.send(message, headers)

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        responses: Any = None,
        state: Any = None,
        envelope: dict[str, Any] | None = None,
    ) -> Reply:
        params: dict[str, Any] = {"name": tool, "arguments": arguments or {}}
        if responses is not None:
            params["inputResponses"] = responses
        if state is not None:
            params["requestState"] = state
        return await self.request("tools/call", params, envelope=envelope)

    async def prompt(self, name: str, arguments: dict[str, Any], *, responses: Any = None, state: Any = None) -> Reply:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if responses is not None:
            params["inputResponses"] = responses
        if state is not None:
            params["requestState"] = state
        return await self.request("prompts/get", params)

    async def read(self, uri: str, *, responses: Any = None, state: Any = None) -> Reply:
        params: dict[str, Any] = {"uri": uri}
        if responses is not None:
            params["inputResponses"] = responses
        if state is not None:
            params["requestState"] = state
        return await self.request("resources/read", params)


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def input_required(reply: Reply) -> dict[str, Any]:
    """The InputRequiredResult of a reply (HTTP 200), checked for its shape."""
    reply.expect_status(200)
    result = reply.result
    assert result["resultType"] == "input_required", result
    assert isinstance(result["requestState"], str) and result["requestState"]
    for request in result["inputRequests"].values():
        assert set(request) == {"method", "params"}
    return result


def complete(reply: Reply) -> dict[str, Any]:
    reply.expect_status(200)
    result = reply.result
    assert result["resultType"] == "complete", result
    return result


@asynccontextmanager
async def memory_wire(server: LowLevelServer) -> AsyncIterator[MemoryWire]:
    wire = MemoryWire(server)
    async with wire.session.peer:
        try:
            yield wire
        finally:
            wire.session.peer.close("test done")


@asynccontextmanager
async def http_wire(server: LowLevelServer) -> AsyncIterator[HttpWire]:
    """Our server on a loopback port in this event loop, and an httpx client for it."""
    from elicitkit.transports.http.serve import serve_http_background

    async with serve_http_background(server, port=0) as handle, httpx.AsyncClient(timeout=10) as client:
        yield HttpWire(client, handle.url)


# ----------------------------------------------------------------------------- processes


def start_http_process(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``modern_server.py http`` as a child process (stop it with :func:`stop`, always)."""
    with log.open("wb") as stderr:
        return subprocess.Popen(
            [sys.executable, str(SCRIPT), "http"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
        )


def read_url(proc: subprocess.Popen[bytes], log: Path) -> str:
    """The ``URL ...`` line the script prints once it serves (blocking, bounded by the caller's timeout)."""
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    assert line.startswith("URL "), f"server did not start: {line!r}\n{log.read_text()[-3000:]}"
    return line[4:].strip()


def stop(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """Close stdin (the script's cue to leave), then terminate, then kill: never leave one behind."""
    if proc.poll() is None:
        with suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with suppress(OSError):
                pipe.close()
