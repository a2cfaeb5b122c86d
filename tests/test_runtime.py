"""The async runtime end to end: timeouts, cancellation, concurrency, progress, requests both ways,
the handshake, and the Streamable HTTP session machinery (standalone GET stream, resumption).

Most tests run over all three transports: ``memory`` (the server in this event loop), ``http``
(``serve_http_background`` in this event loop) and ``stdio`` (``tests/support_server.py`` spawned as
a child process, observed through its stderr and its ``stats`` tool).
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

import elicitkit
from elicitkit import Client, MCPError
from elicitkit.protocol.errors import INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from elicitkit.transports.http.serve import serve_http_background
from kit.raw import (
    INITIALIZED,
    SUPPORT_SERVER,
    RawHTTP,
    call,
    init_request,
    messages,
    read_sse,
    req,
    spawn_stdio,
    tasks_named,
    wait_until,
)
from support_server import SupportServer

pytestmark = pytest.mark.anyio

TRANSPORTS = ["memory", "http", "stdio"]


# ----------------------------------------------------------------------------- harness


class Target:
    """Where a Client connects, and how a test looks at the server behind it."""

    def __init__(self, kind: str, server: SupportServer | None, stderr_path: Path | None = None) -> None:
        self.kind = kind
        self.server = server  # None for stdio: the server lives in the child process
        self.stderr_path = stderr_path
        self.sent: list[dict[str, Any]] = []  # every message the client sent (Client(trace=...))

    def trace(self, direction: str, message: dict[str, Any]) -> None:
        if direction == "send":
            self.sent.append(message)

    def sent_request_id(self, method: str, tool: str | None = None) -> Any:
        for message in self.sent:
            named = tool is None or message.get("params", {}).get("name") == tool
            if message.get("method") == method and "id" in message and named:
                return message["id"]
        raise AssertionError(f"no {method} ({tool}) was sent")

    def sent_cancellations(self) -> list[Any]:
        return [m["params"]["requestId"] for m in self.sent if m.get("method") == "notifications/cancelled"]

    @property
    def stderr(self) -> str:
        assert self.stderr_path is not None
        return self.stderr_path.read_text()

    async def wait_cancelled(self, request_id: Any) -> None:
        if self.server is not None:
            server = self.server
            await wait_until(lambda: request_id in server.cancelled, what=f"handler {request_id!r} to be cancelled")
        else:
            line = f"cancelled:{request_id}"
            await wait_until(lambda: line in self.stderr.splitlines(), what=line)

    async def wait_started(self, request_id: Any) -> None:
        if self.server is not None:
            server = self.server
            await wait_until(lambda: request_id in server.started, what=f"handler {request_id!r} to start")
        else:
            line = f"started:{request_id}"
            await wait_until(lambda: line in self.stderr.splitlines(), what=line)

    async def running_incoming(self, client: Client) -> int:
        """Requests the server is still running for this client (not counting the probe itself)."""
        if self.server is not None:
            return self.server.sessions[-1].peer.conn.running_incoming
        stats = await client.call_tool("stats")
        assert stats.structured_content is not None
        return int(stats.structured_content["running_incoming"]) - 1


@pytest.fixture(scope="module")
async def http_server() -> AsyncIterator[SupportServer]:
    server = SupportServer()
    async with serve_http_background(server, retention_seconds=0.3) as handle:
        server.url = handle.url
        yield server


ROOTS = [{"uri": "file:///home/me/project", "name": "project"}, {"uri": "file:///tmp"}]


class SharedStdio:
    """One spawned stdio server and its Client, opened on first use and shared by the module's tests.

    A spawn costs about a second of imports, so the stdio variants share one. The Client is entered
    lazily from inside the first test that needs it and left at module teardown; the anyio pytest
    plugin runs fixtures and tests in one runner task, so its cancel scopes still nest properly.
    """

    def __init__(self, stack: AsyncExitStack, stderr_path: Path) -> None:
        self._stack = stack
        self.target = Target("stdio", None, stderr_path)
        self._client: Client | None = None

    async def get(self) -> Client:
        if self._client is None:
            assert self.target.stderr_path is not None
            stderr_file = self._stack.enter_context(self.target.stderr_path.open("wb"))
            command = [sys.executable, str(SUPPORT_SERVER)]
            client = Client(command, trace=self.target.trace, roots=ROOTS, transport_options={"stderr": stderr_file})
            self._client = await self._stack.enter_async_context(client)
        return self._client


@pytest.fixture(scope="module")
async def stdio_shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SharedStdio]:
    async with AsyncExitStack() as stack:
        yield SharedStdio(stack, tmp_path_factory.mktemp("stdio-client") / "server-stderr.txt")


Connect = Callable[..., AbstractAsyncContextManager[tuple[Client, Target]]]


@pytest.fixture
def connect(http_server: SupportServer, stdio_shared: SharedStdio) -> Connect:
    """``connect(kind, **client_options)``: an async context manager giving ``(client, target)``.

    memory and http get a fresh Client each time; stdio shares one Client (with ``roots=ROOTS``) per
    module, so its client options cannot vary.
    """

    @asynccontextmanager
    async def open_client(kind: str, **options: Any) -> AsyncIterator[tuple[Client, Target]]:
        if kind == "stdio":
            assert set(options) <= {"roots"} and options.get("roots", ROOTS) == ROOTS, options
            client = await stdio_shared.get()
            stdio_shared.target.sent.clear()
            yield client, stdio_shared.target
            return
        if kind == "memory":
            target = Target(kind, SupportServer())
            where: Any = target.server
        else:
            target = Target(kind, http_server)
            where = http_server.url
        async with Client(where, trace=target.trace, **options) as client:
            yield client, target

    return open_client


# ============================================================================= timeouts and cancellation


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_request_timeout_cancels_the_server_handler(kind: str, connect: Connect) -> None:
    # a spawned process may take longer than 0.2 s to answer initialize: there, time out the call itself
    options = {"timeout": 0.2} if kind != "stdio" else {}
    per_call = 0.2 if kind == "stdio" else None
    async with connect(kind, **options) as (client, target):
        started = time.monotonic()
        with pytest.raises(elicitkit.RequestTimeout) as info:
            await client.call_tool("sleep", {"seconds": 10, "value": "never"}, timeout=per_call)
        elapsed = time.monotonic() - started
        assert 0.15 < elapsed < 2.0
        assert info.value.method == "tools/call"
        assert info.value.is_local
        request_id = target.sent_request_id("tools/call", "sleep")
        # the client told the server, and the server's handler was cancelled
        assert target.sent_cancellations() == [request_id]
        await target.wait_cancelled(request_id)
        assert client.peer.conn.pending_outgoing == 0
        # the connection is still fine, and nothing is left running on the server
        await client.ping()
        assert (await client.call_tool("echo", {"text": "after"})).text == "after"
        assert await target.running_incoming(client) == 0
        if target.server is not None:
            assert request_id not in target.server.finished


async def test_per_call_timeout_overrides_the_default(connect: Connect) -> None:
    async with connect("memory", timeout=None) as (client, _):
        with pytest.raises(elicitkit.RequestTimeout):
            await client.call_tool("sleep", {"seconds": 10}, timeout=0.1)
        assert (await client.call_tool("sleep", {"seconds": 0.05, "value": "ok"}, timeout=5)).text == "ok"


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_cancelling_the_awaiting_task_cancels_the_server_handler(kind: str, connect: Connect) -> None:
    async with connect(kind) as (client, target):
        outcome: list[Any] = []

        async def call_it() -> None:
            outcome.append(await client.call_tool("sleep", {"seconds": 30}))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call_it)
                await wait_until(lambda: any(m.get("method") == "tools/call" for m in target.sent))
                request_id = target.sent_request_id("tools/call", "sleep")
                await target.wait_started(request_id)
                tg.cancel_scope.cancel()
        assert outcome == []
        assert target.sent_cancellations() == [request_id]
        await target.wait_cancelled(request_id)
        assert client.peer.conn.pending_outgoing == 0
        await client.ping()
        assert await target.running_incoming(client) == 0


# ============================================================================= concurrency


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_many_concurrent_requests_get_their_own_answers(kind: str, connect: Connect) -> None:
    count = 200
    rng = random.Random(1234)
    sleeps = [rng.uniform(0, 0.2) for _ in range(count)]
    results: dict[int, str] = {}
    async with connect(kind) as (client, target):

        async def one(i: int) -> None:
            result = await client.call_tool("sleep", {"seconds": sleeps[i], "value": f"answer-{i}"})
            results[i] = result.text

        with anyio.fail_after(15):
            async with anyio.create_task_group() as tg:
                for i in range(count):
                    tg.start_soon(one, i)
        assert results == {i: f"answer-{i}" for i in range(count)}
        assert client.peer.conn.pending_outgoing == 0
        assert await target.running_incoming(client) == 0
        if target.server is not None and kind == "memory":
            # they really ran at once, and finished in another order than they started
            assert len(target.server.started) == count
            assert target.server.finished != target.server.started


async def test_concurrent_requests_in_both_directions(connect: Connect) -> None:
    async with connect("memory", roots=[{"uri": "file:///r", "name": "r"}]) as (client, _):
        results: list[Any] = []

        async def roots() -> None:
            results.append((await client.call_tool("roots")).structured_content)

        async def ping() -> None:
            await client.ping()
            results.append("pong")

        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(roots)
                tg.start_soon(ping)
        assert results.count("pong") == 50
        assert [r for r in results if r != "pong"] == [{"roots": [{"uri": "file:///r", "name": "r"}]}] * 50


# ============================================================================= progress, ping, roots


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_progress_notifications_reach_the_callback(kind: str, connect: Connect) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connect(kind) as (client, target):
        result = await client.call_tool("progress", {"steps": 4, "delay": 0.01}, progress_callback=on_progress)
        assert result.text == "done"
        assert seen == [(float(i), 4.0, f"step {i}") for i in range(1, 5)]
        request = next(m for m in target.sent if m.get("method") == "tools/call")
        assert request["params"]["_meta"]["progressToken"] == request["id"]
        # without a callback no token is sent and the server sends no progress
        seen.clear()
        assert (await client.call_tool("progress", {"steps": 2})).text == "done"
        assert seen == []


async def test_sync_progress_callback_and_failing_callback(connect: Connect) -> None:
    seen: list[float] = []

    def sync_cb(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    def bad_cb(progress: float, total: float | None, message: str | None) -> None:
        raise RuntimeError("callback bug")

    async with connect("memory") as (client, _):
        assert (await client.call_tool("progress", {"steps": 2}, progress_callback=sync_cb)).text == "done"
        assert seen == [1.0, 2.0]
        assert (await client.call_tool("progress", {"steps": 2}, progress_callback=bad_cb)).text == "done"


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_ping_both_ways(kind: str, connect: Connect) -> None:
    async with connect(kind) as (client, _):
        await client.ping()
        assert await client.request("ping") == {}
        result = await client.call_tool("ping_client")
        assert result.text == "pinged"
        assert result.structured_content == {}


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_server_to_client_roots_request(kind: str, connect: Connect) -> None:
    async with connect(kind, roots=ROOTS) as (client, _):
        assert client.capabilities()["roots"] == {"listChanged": True}
        result = await client.call_tool("roots")
        assert result.structured_content == {"roots": ROOTS}


async def test_roots_callback_is_called_each_time(connect: Connect) -> None:
    calls = 0

    async def roots() -> list[dict[str, Any]]:
        nonlocal calls
        calls += 1
        return [{"uri": f"file:///r{calls}"}]

    async with connect("memory", roots=roots) as (client, target):
        assert (await client.call_tool("roots")).structured_content == {"roots": [{"uri": "file:///r1"}]}
        assert (await client.call_tool("roots")).structured_content == {"roots": [{"uri": "file:///r2"}]}
        assert target.server is not None
        assert target.server.sessions[-1].client_supports("roots")


async def test_roots_request_to_a_client_without_roots_is_method_not_found(connect: Connect) -> None:
    async with connect("memory") as (client, target):
        assert "roots" not in client.capabilities()
        with pytest.raises(MCPError) as info:
            await client.call_tool("roots")
        assert info.value.code == METHOD_NOT_FOUND
        assert target.server is not None
        assert not target.server.sessions[-1].client_supports("roots")
        await client.ping()


# ============================================================================= handshake


@pytest.mark.parametrize("kind", ["memory", "http"])
@pytest.mark.parametrize(
    ("offered", "answered"),
    [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ],
)
async def test_handshake_version_negotiation(kind: str, offered: str, answered: str, connect: Connect) -> None:
    async with connect(kind, protocol_version=offered) as (client, target):
        assert client.protocol_version == answered
        assert client.server_info == {"name": "support-server", "version": "1.2.3"}
        assert client.instructions == "used by the elicitkit tests"
        assert client.server_declares("tools")
        init = next(m for m in target.sent if m.get("method") == "initialize")
        assert init["params"]["protocolVersion"] == offered
        assert any(m.get("method") == "notifications/initialized" for m in target.sent)
        assert target.server is not None
        session = target.server.sessions[-1]
        assert session.protocol_version == answered
        assert session.client_info["name"] == "elicitkit"
        assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"


class HandFed:
    """A bare ServerSession fed raw bytes by hand; what it sends is collected in order."""

    def __init__(self) -> None:
        self.server = SupportServer()
        self.sent: list[dict[str, Any]] = []
        self.session = self.server.create_session(self._send)

    async def _send(self, message: dict[str, Any], related: Any) -> None:
        self.sent.append(message)

    async def exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        """Feed one request and return its answer (and check nothing else was sent)."""
        before = len(self.sent)
        await self.session.peer.feed(orjson.dumps(message))
        await wait_until(lambda: len(self.sent) > before, what=f"an answer to {message.get('method')}")
        assert len(self.sent) == before + 1, self.sent[before:]
        return self.sent[-1]


@pytest.mark.parametrize(
    ("offered", "answered"),
    [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("1999-12-31", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ],
)
async def test_raw_handshake_answers(offered: str, answered: str) -> None:
    """The exact initialize results on the wire, for known and unknown offered versions."""
    fed = HandFed()
    async with fed.session.peer:
        answer = await fed.exchange(init_request(7, offered))
        assert answer == {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {
                "protocolVersion": answered,
                "capabilities": {"logging": {}, "tools": {"listChanged": True}},
                "serverInfo": {"name": "support-server", "version": "1.2.3"},
                "instructions": "used by the elicitkit tests",
            },
        }
        await fed.session.peer.feed(orjson.dumps(INITIALIZED))
        second = await fed.exchange(init_request(8, "2025-11-25"))
        assert second["id"] == 8
        assert second["error"]["code"] == INVALID_REQUEST  # only once per session
        assert fed.session.protocol_version == answered
        assert await fed.exchange(req(9, "ping")) == {"jsonrpc": "2.0", "id": 9, "result": {}}


async def test_client_rejects_a_server_answering_an_unsupported_version() -> None:
    class OldServer(SupportServer):
        def create_session(self, send: Any, **kwargs: Any) -> Any:
            session = super().create_session(send, **kwargs)
            session.handshake.supported_versions = ("1999-01-01",)
            return session

    with pytest.raises(MCPError) as info:
        async with Client(OldServer()):
            pass
    assert "1999-01-01" in info.value.message


async def test_requests_before_initialize_are_rejected_but_ping_is_allowed(tmp_path: Path) -> None:
    async with spawn_stdio(tmp_path) as child:
        await child.write(b"{oops\n42\n")  # bad input before the handshake is answered as always
        assert (await child.recv())["error"]["code"] == PARSE_ERROR
        assert (await child.recv())["error"]["code"] == INVALID_REQUEST
        for request_id, method in ((1, "tools/list"), (2, "tools/call"), (3, "logging/setLevel"), (4, "no/such")):
            answer = await child.request(req(request_id, method, {}))
            assert answer["error"]["code"] == INVALID_REQUEST, answer
            assert "initialize" in answer["error"]["message"]
        assert await child.request(req(5, "ping")) == {"jsonrpc": "2.0", "id": 5, "result": {}}
        await child.send(INITIALIZED)  # before initialize: ignored
        assert (await child.request(req(6, "tools/list")))["error"]["code"] == INVALID_REQUEST
        await child.request(init_request())
        # between initialize and notifications/initialized requests are served
        assert "tools" in (await child.request(req(7, "tools/list")))["result"]
        await child.send(INITIALIZED)
        assert (await child.request(call(8, "echo", text="ready")))["result"]["content"][0]["text"] == "ready"


async def test_in_process_session_before_initialize() -> None:
    """The same through a bare ServerSession fed by hand: exact wire answers, nothing else sent."""
    fed = HandFed()
    async with fed.session.peer:
        rejected = await fed.exchange(req(1, "tools/list"))
        assert rejected["id"] == 1 and rejected["error"]["code"] == INVALID_REQUEST
        assert await fed.exchange(req(2, "ping")) == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert (await fed.exchange(init_request(3)))["result"]["protocolVersion"] == "2025-11-25"
        assert "tools" in (await fed.exchange(req(4, "tools/list")))["result"]
        assert fed.session.peer.conn.running_incoming == 0


# ============================================================================= HTTP sessions and streams


@pytest.fixture
async def http(http_server: SupportServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


@pytest.fixture
async def raw(http: httpx.AsyncClient, http_server: SupportServer) -> RawHTTP:
    assert http_server.url is not None
    peer = RawHTTP(http, http_server.url)
    await peer.initialize()
    return peer


async def test_http_standalone_get_stream_receives_unrelated_notifications(
    raw: RawHTTP, http_server: SupportServer
) -> None:
    headers = raw.headers(Accept="text/event-stream")
    del headers["Content-Type"]
    async with raw.http.stream("GET", raw.url, headers=headers) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.headers["mcp-session-id"] == raw.session_id
        # a second standalone stream for the same session is refused while this one is open
        second = await raw.http.get(raw.url, headers=headers)
        assert second.status_code == 409
        # the tool answers at once; its notification comes later, outside any request
        answer = await raw.request(call(1, "notify_later", delay=0.1))
        assert answer["result"]["content"][0]["text"] == "scheduled"
        with anyio.fail_after(5):
            events = await read_sse(stream, lambda evs: bool(messages(evs)))
    assert messages(events) == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    assert all(e.id is not None for e in events if e.data)
    await raw.assert_ping()


async def test_http_client_receives_unrelated_notifications(http_server: SupportServer) -> None:
    received: list[tuple[str, dict[str, Any]]] = []
    got = anyio.Event()

    def on_notification(method: str, params: dict[str, Any]) -> None:
        received.append((method, params))
        got.set()

    assert http_server.url is not None
    async with Client(http_server.url, notification_callback=on_notification) as client:
        standalone = http_server.sessions[-1].streams.standalone  # the HTTPSession's GET stream
        await wait_until(lambda: standalone.listeners == 1, what="the client to open its standalone GET stream")
        await client.call_tool("notify_later", {"delay": 0.05})
        with anyio.fail_after(5):
            await got.wait()
    assert received == [("notifications/tools/list_changed", {})]


async def test_http_sse_resumption_with_last_event_id(raw: RawHTTP, http_server: SupportServer) -> None:
    request = call("resume-me", "progress", meta={"progressToken": "tok"}, steps=3, delay=0.15)
    first_part: list[Any] = []
    async with raw.http.stream("POST", raw.url, content=orjson.dumps(request), headers=raw.headers()) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        with anyio.fail_after(5):
            first_part = await read_sse(resp, lambda evs: bool(messages(evs)))
    # the connection dropped after the first progress notification, mid-call
    assert first_part[0].data == "" and first_part[0].id is not None  # the priming event (2025-11-25)
    assert messages(first_part) == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "tok", "progress": 1, "total": 3, "message": "step 1"},
        }
    ]
    last_id = [e.id for e in first_part if e.id is not None][-1]
    headers = raw.headers(Accept="text/event-stream", **{"Last-Event-ID": last_id})
    del headers["Content-Type"]
    async with raw.http.stream("GET", raw.url, headers=headers) as resumed:
        assert resumed.status_code == 200
        with anyio.fail_after(5):
            rest = await read_sse(resumed, lambda evs: any("result" in m for m in messages(evs)))
    rest_messages = messages(rest)
    assert [m["params"]["progress"] for m in rest_messages if m.get("method") == "notifications/progress"] == [2, 3]
    assert rest_messages[-1] == {
        "jsonrpc": "2.0",
        "id": "resume-me",
        "result": {"content": [{"type": "text", "text": "done"}]},
    }
    ids = [e.id for e in first_part + rest if e.data]
    assert len(ids) == len(set(ids)) == 4  # nothing replayed twice, nothing skipped
    await raw.assert_ping()


async def test_http_sse_resumption_leaves_no_tasks_behind(raw: RawHTTP, http_server: SupportServer) -> None:
    """After a dropped-and-resumed stream completes, no watcher task of it may stay behind."""
    before = set(tasks_named("_retire_when_done"))
    # several progress events still to come after the resume, so both waiters see a non-final push
    request = call("resume-2", "progress", meta={"progressToken": "t2"}, steps=6, delay=0.15)
    async with raw.http.stream("POST", raw.url, content=orjson.dumps(request), headers=raw.headers()) as resp:
        first_part = await read_sse(resp, lambda evs: bool(messages(evs)))
    last_id = [e.id for e in first_part if e.id is not None][-1]
    headers = raw.headers(Accept="text/event-stream", **{"Last-Event-ID": last_id})
    async with raw.http.stream("GET", raw.url, headers=headers) as resumed:
        with anyio.fail_after(5):
            rest = await read_sse(resumed, lambda evs: any("result" in m for m in messages(evs)))
    assert messages(rest)[-1]["id"] == "resume-2"
    await wait_until(lambda: set(tasks_named("_retire_when_done")) <= before, timeout=0.5, what="the watcher to end")


async def test_http_resumption_from_an_unknown_event_id_is_404(raw: RawHTTP) -> None:
    for last_id in ("zz/1", "r999/0", "garbage"):
        headers = raw.headers(Accept="text/event-stream", **{"Last-Event-ID": last_id})
        assert (await raw.http.get(raw.url, headers=headers)).status_code == 404
    await raw.assert_ping()


async def test_http_cancelled_request_leaves_no_stream_or_task_behind(raw: RawHTTP, http_server: SupportServer) -> None:
    """A request the client cancels (and stops waiting for) must not pin its stream forever."""
    before = set(tasks_named("_retire_when_done"))
    with anyio.move_on_after(0.3):
        await raw.post(call("cx", "sleep", seconds=30))
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "cx"}}
    assert (await raw.post(note)).status_code == 202
    await wait_until(lambda: "cx" in http_server.cancelled, what="the handler to be cancelled")
    assert http_server.sessions[-1].peer.conn.running_incoming == 0
    await raw.assert_ping()
    streams = http_server.sessions[-1].streams.streams  # the HTTPSession's open request streams
    await wait_until(lambda: "cx" not in streams, timeout=1, what="the cancelled request's stream to be dropped")
    await wait_until(lambda: set(tasks_named("_retire_when_done")) <= before, timeout=0.5, what="the watcher to end")
