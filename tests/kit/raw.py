"""One raw JSON-RPC peer for every test: dicts in, dicts out, no elicitkit client smoothing anything.

A test sends exactly the message it wants and sees exactly what came back, so it can send what
the real :class:`~elicitkit.Client` never would (bad lines, late or invalid answers, odd envelopes).

Three ways to reach a server, one interface (:class:`RawPeer`: ``send``, ``recv``, ``request``,
``answer``, ``initialize``):

* :func:`memory_peer` - a server object in this process, through a
  :class:`~elicitkit.server.session.ServerSession` exactly as the in-memory transport does;
* :func:`spawn_stdio` / :func:`stdio_peer` - a server script as a child speaking newline-delimited JSON;
* :class:`RawHTTP` - Streamable HTTP with httpx (legacy sessions or 2026 stateless POSTs).

On top, the 2026-07-28 helpers: :func:`meta` (the envelope), :func:`headers_for`, :class:`Reply`
and :class:`Modern`, which runs one test body over :class:`MemoryWire` or :class:`RawHTTP`.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
from anyio.abc import Process

from elicitkit.protocol.framing import LineFramer, SSEEvent, SSEParser
from elicitkit.protocol.jsonrpc import JSON, RequestId, encode
from elicitkit.server.lowlevel import LowLevelServer
from elicitkit.server.session import ServerSession
from kit.processes import start_announcing, stop_child

TESTS = Path(__file__).resolve().parent.parent
SUPPORT_SERVER = TESTS / "support_server.py"
ELICIT_SERVER = TESTS / "elicitation" / "elicit_server.py"
MODERN_SERVER = TESTS / "server" / "modern_server.py"

ELICITING: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
"""The capabilities :func:`memory_peer` and :func:`stdio_peer` declare unless told otherwise."""

# ----------------------------------------------------------------------------- messages


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


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def tasks_named(fragment: str) -> list[asyncio.Task[Any]]:
    """Live asyncio tasks of this loop whose (anyio-assigned, qualified) name contains ``fragment``."""
    return [t for t in asyncio.all_tasks() if fragment in t.get_name() and not t.done()]


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Poll ``predicate`` (the state it watches has no event to wait on)."""
    with anyio.move_on_after(timeout):
        while not predicate():  # noqa: ASYNC110
            await anyio.sleep(0.01)
    assert predicate(), f"timed out waiting for {what}"


# ----------------------------------------------------------------------------- one peer, three transports


class RawPeer:
    """JSON-RPC over an abstract ``send``/``_receive``; every message read is kept in ``received``."""

    def __init__(self, capabilities: dict[str, Any] | None = None) -> None:
        self.capabilities = {} if capabilities is None else capabilities
        self.received: list[dict[str, Any]] = []
        self._next = 0
        self._sync = 0

    async def send(self, message: Any) -> None:
        raise NotImplementedError

    async def _receive(self) -> dict[str, Any]:
        raise NotImplementedError

    async def recv(self, timeout: float = 5.0) -> Any:
        with anyio.fail_after(timeout):
            message = await self._receive()
        self.received.append(message)
        return message

    async def recv_until(self, predicate: Callable[[Any], bool], timeout: float = 5.0) -> dict[str, Any]:
        """Read (and keep in ``received``) until a message matches."""
        with anyio.fail_after(timeout):
            while True:
                message = await self.recv(timeout)
                if predicate(message):
                    return message  # type: ignore[no-any-return]

    def next_id(self) -> str:
        self._next += 1
        return f"raw-{self._next}"

    async def request(self, obj: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        """Send a request; the next message must be its answer."""
        await self.send(obj)
        answer = await self.recv(timeout)
        assert answer.get("id") == obj["id"] and "method" not in answer, answer
        return answer  # type: ignore[no-any-return]

    async def initialize(self, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None) -> Any:
        caps = self.capabilities if capabilities is None else capabilities
        answer = await self.request(init_request(version=version, **caps))
        await self.send(INITIALIZED)
        return answer

    async def call(self, tool: str, **arguments: Any) -> str:
        """Start a tool call without waiting; its id, for :meth:`response_to`."""
        request_id = self.next_id()
        await self.send(call(request_id, tool, **arguments))
        return request_id

    async def answer(self, request_id: RequestId, result: dict[str, Any]) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def next_elicitation(self, timeout: float = 5.0) -> dict[str, Any]:
        return await self.recv_until(lambda m: m.get("method") == "elicitation/create", timeout)

    async def response_to(self, request_id: RequestId, timeout: float = 5.0) -> dict[str, Any]:
        return await self.recv_until(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    async def ping(self) -> None:
        """Ping, skipping whatever came before its answer."""
        request_id = self.next_id()
        await self.send(req(request_id, "ping"))
        assert await self.response_to(request_id) == {"jsonrpc": "2.0", "id": request_id, "result": {}}

    async def assert_ping(self, request_id: Any = "ping") -> None:
        """Ping; the very next message must be its answer."""
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


class MemoryPeer(RawPeer):
    """A server session in this process; every message it sends is also kept in ``outgoing``."""

    def __init__(self, server: LowLevelServer, capabilities: dict[str, Any] | None = None) -> None:
        super().__init__(ELICITING if capabilities is None else capabilities)
        self._out, self._in = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        self.session = server.create_session(self._to_client)
        self.outgoing: list[dict[str, Any]] = []

    async def _to_client(self, message: JSON, related: RequestId | None) -> None:
        decoded = orjson.loads(encode(message))
        self.outgoing.append(decoded)
        await self._out.send(decoded)

    async def send(self, message: Any) -> None:
        await self.session.peer.feed(orjson.dumps(message))

    async def _receive(self) -> dict[str, Any]:
        return await self._in.receive()


@asynccontextmanager
async def memory_peer(server: LowLevelServer, capabilities: dict[str, Any] | None = None) -> AsyncIterator[MemoryPeer]:
    peer = MemoryPeer(server, capabilities)
    async with peer.session.peer:
        try:
            yield peer
        finally:
            peer.session.peer.close("raw peer done")


class StdioPeer(RawPeer):
    """A spawned server script speaking newline-delimited JSON on its stdin/stdout."""

    def __init__(self, process: Process, stderr_path: Path, capabilities: dict[str, Any] | None = None) -> None:
        super().__init__(capabilities)
        self.process = process
        self.stderr_path = stderr_path
        self._framer = LineFramer(64 * 1024 * 1024)
        self._frames: deque[bytes] = deque()

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    async def write(self, data: bytes) -> None:
        """Raw bytes, for lines no JSON encoder would produce."""
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def send(self, message: Any) -> None:
        await self.write(orjson.dumps(message) + b"\n")

    async def _receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while not self._frames:
            chunk = await self.process.stdout.receive()
            for frame in self._framer.feed(chunk):
                assert isinstance(frame, bytes), frame
                self._frames.append(frame)
        return orjson.loads(self._frames.popleft())  # type: ignore[no-any-return]

    async def wait_for_stderr(self, text: str, timeout: float = 5.0) -> None:
        await wait_until(lambda: text in self.stderr, timeout, f"{text!r} on the server's stderr")


StdioChild = StdioPeer
"""The name the transport tests know it by."""

_spawned = itertools.count()


@asynccontextmanager
async def spawn_stdio(
    tmp_path: Path,
    *args: str,
    script: Path = SUPPORT_SERVER,
    capabilities: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[StdioPeer]:
    """``script *args`` as a child (``support_server.py`` unless told), stopped on the way out."""
    stderr_path = tmp_path / f"stderr-{next(_spawned)}.txt"
    with stderr_path.open("wb") as stderr:
        process = await anyio.open_process(
            [sys.executable, str(script), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
        )
    try:
        yield StdioPeer(process, stderr_path, capabilities)
    finally:
        await stop_child(process)


def stdio_peer(tmp_path: Path) -> Any:
    """``elicitation/elicit_server.py`` as a child, with an eliciting client's capabilities."""
    return spawn_stdio(tmp_path, script=ELICIT_SERVER, capabilities=ELICITING)


# ----------------------------------------------------------------------------- HTTP

ACCEPT_BOTH = "application/json, text/event-stream"
ACCEPT = ACCEPT_BOTH


class RawHTTP:
    """Streamable HTTP driven with raw httpx requests: a legacy session, or 2026 stateless POSTs."""

    kind = "http"

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.session_id: str | None = None
        self.protocol_version: str | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        return self.http

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

    async def send(self, message: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
        """One POST whose answer (JSON or SSE) comes back as a :class:`Reply` with its status."""
        response = await self.post(message, self.headers(**(headers or {})))
        return reply_of(response, message.get("id"))

    async def initialize(
        self, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Open a legacy session: its id and negotiated version go on every later request."""
        resp = await self.post(init_request(version=version, **(capabilities or {})))
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

    async def ping(self, request_id: str = "ping") -> None:
        """Ping; the answer may come as JSON or in any framing the body allows."""
        resp = await self.post(req(request_id, "ping"))
        assert resp.json() == {"jsonrpc": "2.0", "id": request_id, "result": {}}, resp.text

    async def answer(self, request_id: Any, result: dict[str, Any]) -> None:
        """Answer a server's request; a response POST is accepted with 202 and no body."""
        resp = await self.post({"jsonrpc": "2.0", "id": request_id, "result": result})
        assert resp.status_code == 202, (resp.status_code, resp.text)

    async def delete(self) -> httpx.Response:
        return await self.http.delete(self.url, headers=self.headers())


HttpWire = RawHTTP
"""The name the 2026 server tests know it by."""


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


def sse_data(text: str) -> Iterator[dict[str, Any]]:
    """The JSON ``data:`` of each event of an SSE body (one data line per event here)."""
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            yield orjson.loads(line[5:].strip())


@asynccontextmanager
async def http_wire(server: LowLevelServer) -> AsyncIterator[RawHTTP]:
    """Our server on a loopback port in this event loop, and a raw HTTP peer for it."""
    from elicitkit.transports.http.serve import serve_http_background

    async with serve_http_background(server, port=0) as handle, httpx.AsyncClient(timeout=10) as client:
        yield RawHTTP(client, handle.url)


def start_http_process(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``server/modern_server.py http`` as a child (stop it with :func:`kit.processes.stop_process`, always)."""
    return start_announcing([sys.executable, str(MODERN_SERVER), "http"], env, log)


# ----------------------------------------------------------------------------- 2026-07-28

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


class MemoryWire:
    """:class:`Modern`'s in-process wire: a :class:`MemoryPeer` whose sends wait for their answer."""

    kind = "memory"

    def __init__(self, server: LowLevelServer) -> None:
        self.peer = MemoryPeer(server)
        self._waiting: dict[RequestId, dict[str, Any]] = {}

    @property
    def session(self) -> ServerSession:
        return self.peer.session

    @property
    def outgoing(self) -> list[dict[str, Any]]:
        """Every message the server sent, answers and requests alike."""
        return self.peer.outgoing

    async def send(self, message: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
        """Answers to other ids that arrive first are kept for their own ``send``."""
        await self.peer.send(message)
        with anyio.fail_after(5):
            while message["id"] not in self._waiting:
                got = await self.peer._receive()
                if "id" in got and "method" not in got:
                    self._waiting[got["id"]] = got
        return Reply(self._waiting.pop(message["id"]))


Wire = MemoryWire | RawHTTP
"""What :class:`Modern` sends through."""


@asynccontextmanager
async def memory_wire(server: LowLevelServer) -> AsyncIterator[MemoryWire]:
    wire = MemoryWire(server)
    async with wire.session.peer:
        try:
            yield wire
        finally:
            wire.session.peer.close("test done")


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
