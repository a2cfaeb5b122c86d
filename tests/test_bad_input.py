"""Bad input over the real transports: every rejection is answered (or dropped) correctly, and the
connection keeps serving afterwards.

stdio tests spawn ``tests/support_server.py`` (``serve_stdio``) and write raw bytes to its stdin;
HTTP tests run ``serve_http_background`` in the test's event loop and send raw requests with httpx.
After every bad input the same connection (stdio process / HTTP session) answers a ``ping``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

from elicitkit import Client
from elicitkit.protocol.errors import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from elicitkit.transports.http.serve import serve_http_background
from kit.raw import (
    INITIALIZED,
    SUPPORT_SERVER,
    RawHTTP,
    StdioChild,
    call,
    init_request,
    req,
    spawn_stdio,
    tasks_named,
    wait_until,
)
from support_server import SupportServer

pytestmark = pytest.mark.anyio

HTTP_LIMIT = 4096
STDIO_LIMIT = 4096

# (raw line, expected error code, expected id) -- None code: no answer at all
BAD_LINES: dict[str, tuple[bytes, int | None, Any]] = {
    "invalid-json": (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', PARSE_ERROR, None),
    "invalid-utf8": (b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"}', PARSE_ERROR, None),
    "trailing-garbage": (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"} x', PARSE_ERROR, None),
    "number": (b"42", INVALID_REQUEST, None),
    "string": (b'"x"', INVALID_REQUEST, None),
    "null": (b"null", INVALID_REQUEST, None),
    "batch": (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', INVALID_REQUEST, None),
    "empty-batch": (b"[]", INVALID_REQUEST, None),
    "wrong-jsonrpc": (b'{"jsonrpc": "1.0", "id": "w1", "method": "ping"}', INVALID_REQUEST, "w1"),
    "missing-jsonrpc": (b'{"id": 17, "method": "ping"}', INVALID_REQUEST, 17),
    "unknown-method": (b'{"jsonrpc": "2.0", "id": 5, "method": "no/such/method"}', METHOD_NOT_FOUND, 5),
    "float-id": (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', INVALID_REQUEST, None),
    "bool-id": (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST, None),
    "array-params": (b'{"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": [1]}', INVALID_PARAMS, 6),
    "empty-method": (b'{"jsonrpc": "2.0", "id": 8, "method": ""}', INVALID_REQUEST, 8),
    "no-method-no-id": (b'{"jsonrpc": "2.0", "params": {}}', INVALID_REQUEST, None),
    # ignored by design, nothing comes back
    "malformed-response": (b'{"jsonrpc": "2.0", "id": 1, "result": 5}', None, None),
    "notification-bad-params": (b'{"jsonrpc": "2.0", "method": "n", "params": [1]}', None, None),
    "unknown-notification": (b'{"jsonrpc": "2.0", "method": "notifications/whatever"}', None, None),
}


def assert_error(message: dict[str, Any], code: int, request_id: Any) -> None:
    assert message["jsonrpc"] == "2.0"
    assert "result" not in message
    assert message["id"] == request_id, message
    assert message["error"]["code"] == code, message
    assert isinstance(message["error"]["message"], str)


# ============================================================================= stdio


@pytest.fixture(scope="module")
async def shared_child(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[StdioChild]:
    """One initialized stdio server (limit ``STDIO_LIMIT``) for the tests that need nothing special."""
    async with spawn_stdio(tmp_path_factory.mktemp("stdio"), str(STDIO_LIMIT)) as child:
        await child.initialize()
        yield child


@pytest.fixture
async def child(shared_child: StdioChild) -> StdioChild:
    await shared_child.sync()
    return shared_child


@pytest.mark.parametrize("case", list(BAD_LINES))
async def test_stdio_bad_line_is_answered_and_connection_survives(child: StdioChild, case: str) -> None:
    line, code, request_id = BAD_LINES[case]
    await child.write(line + b"\n")
    if code is not None:
        assert_error(await child.recv(), code, request_id)
    # stdio is ordered: if anything else had been sent for the bad line it would come first
    await child.assert_ping()
    await child.assert_ping("ping-2")


async def test_stdio_blank_lines_are_ignored(child: StdioChild) -> None:
    await child.write(b"\n\r\n   \n")
    await child.assert_ping()


async def test_stdio_duplicate_request_id_while_first_is_running(child: StdioChild) -> None:
    await child.send(call(9, "sleep", seconds=0.5, value="first"))
    await child.send(call(9, "echo", text="second"))
    assert_error(await child.recv(), INVALID_REQUEST, 9)
    await child.assert_ping()
    first = await child.recv()
    assert first == {
        "jsonrpc": "2.0",
        "id": 9,
        "result": {"content": [{"type": "text", "text": "first"}]},
    }
    # the id is free again once answered
    again = await child.request(call(9, "echo", text="third"))
    assert again["result"]["content"][0]["text"] == "third"


async def test_stdio_response_to_unknown_id_is_dropped_and_logged(child: StdioChild) -> None:
    await child.send({"jsonrpc": "2.0", "id": "nope", "result": {}})
    await child.send({"jsonrpc": "2.0", "id": 4242, "error": {"code": -32000, "message": "x"}})
    await child.assert_ping()
    await child.wait_for_stderr("response to unknown request id 'nope'")
    await child.wait_for_stderr("response to unknown request id 4242")


async def test_stdio_oversized_message_is_rejected_then_connection_serves(child: StdioChild) -> None:
    small = call(1, "echo", text="y" * (STDIO_LIMIT // 2))
    assert (await child.request(small))["result"]["content"][0]["text"] == "y" * (STDIO_LIMIT // 2)
    # one write
    await child.send(call(2, "echo", text="x" * (STDIO_LIMIT * 3)))
    answer = await child.recv()
    assert_error(answer, INVALID_REQUEST, None)
    assert str(STDIO_LIMIT) in answer["error"]["message"]
    await child.assert_ping()
    # many writes, the line far bigger than any read chunk: discarded as it streams in
    big = orjson.dumps(call(3, "echo", text="z" * (600 * 1024))) + b"\n"
    for start in range(0, len(big), 8192):
        await child.write(big[start : start + 8192])
    assert_error(await child.recv(), INVALID_REQUEST, None)
    await child.assert_ping("ping-2")
    assert "dropped a" in child.stderr
    # exactly at the limit is fine
    exact = call(4, "echo", text="")
    pad = STDIO_LIMIT - len(orjson.dumps(exact))
    exact["params"]["arguments"]["text"] = "e" * pad
    assert len(orjson.dumps(exact)) == STDIO_LIMIT
    assert (await child.request(exact))["result"]["content"][0]["text"] == "e" * pad


async def test_stdio_bad_input_leaks_no_tasks(child: StdioChild) -> None:
    baseline = await child.stats()
    assert baseline["running_incoming"] == 1  # the stats request itself
    for line, _code, _id in BAD_LINES.values():
        await child.write(line + b"\n")
    await child.write(b"x" * (STDIO_LIMIT * 2) + b"\n")
    # a request cancelled by the client, and one that completes
    await child.send(call("c1", "sleep", seconds=30))
    await child.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c1"}})
    await child.wait_for_stderr("cancelled:c1")
    await child.send(call("s1", "sleep", seconds=0.05, value="ok"))
    replies = []
    while True:
        message = await child.recv()
        replies.append(message)
        if message.get("id") == "s1":
            break
    assert all(m.get("id") != "c1" for m in replies)  # no answer to a cancelled request
    after = await child.stats("stats-2")
    assert after == baseline


async def test_stdio_client_closes_stdin_mid_request(tmp_path: Path) -> None:
    async with spawn_stdio(tmp_path) as child:
        await child.initialize()
        await child.send(call("long", "sleep", seconds=30))
        await child.wait_for_stderr("started:long")
        assert child.process.stdin is not None
        await child.process.stdin.aclose()
        with anyio.fail_after(5):
            code = await child.process.wait()
        assert code == 0, child.stderr
        assert "cancelled:long" in child.stderr  # the running handler was cancelled, not left behind
        assert "server exited cleanly" in child.stderr
        assert "Traceback" not in child.stderr


async def test_stdio_client_closes_its_read_end_mid_request(tmp_path: Path) -> None:
    # anyio's process stdout wrapper does not close the pipe on aclose(), so use a pipe we own
    read_fd, write_fd = os.pipe()
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("wb") as stderr:
        process = await anyio.open_process(
            [sys.executable, str(SUPPORT_SERVER)], stdin=subprocess.PIPE, stdout=write_fd, stderr=stderr
        )
    os.close(write_fd)
    assert process.stdin is not None
    try:
        os.set_blocking(read_fd, False)
        await process.stdin.send(orjson.dumps(init_request()) + b"\n")
        buf = b""
        with anyio.fail_after(5):
            while not buf.endswith(b"\n"):
                await anyio.wait_readable(read_fd)
                buf += os.read(read_fd, 65536)
        assert orjson.loads(buf)["id"] == "init"
        await process.stdin.send(orjson.dumps(INITIALIZED) + b"\n")
        await process.stdin.send(orjson.dumps(call("long", "sleep", seconds=0.3)) + b"\n")
        os.close(read_fd)  # the client goes away without a word
        read_fd = -1
        # the tool finishes and its answer cannot be written; give the server a moment to deal with that
        await wait_until(lambda: "finished:long" in stderr_path.read_text(), what="the tool to finish")
        with anyio.move_on_after(0.5):
            await process.wait()
        with contextlib.suppress(anyio.BrokenResourceError, OSError):
            await process.stdin.aclose()
        with anyio.fail_after(5):
            code = await process.wait()
        stderr_text = stderr_path.read_text()
        assert "Traceback" not in stderr_text, stderr_text
        assert code == 0
    finally:
        if read_fd >= 0:
            os.close(read_fd)
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.aclose()


# ============================================================================= HTTP


@pytest.fixture(scope="module")
async def http_server() -> AsyncIterator[SupportServer]:
    """One HTTP server for the module; every test opens its own session on it."""
    server = SupportServer()
    async with serve_http_background(server, max_message_bytes=HTTP_LIMIT, retention_seconds=0.3) as handle:
        server.url = handle.url
        yield server


@pytest.fixture(scope="module")
async def http(http_server: SupportServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


@pytest.fixture
async def raw(http: httpx.AsyncClient, http_server: SupportServer) -> RawHTTP:
    assert http_server.url is not None
    peer = RawHTTP(http, http_server.url)
    await peer.initialize()
    return peer


@pytest.mark.parametrize("case", [c for c, (_, code, _) in BAD_LINES.items() if code not in (None, METHOD_NOT_FOUND)])
async def test_http_bad_body_is_rejected_and_session_survives(
    raw: RawHTTP, http_server: SupportServer, case: str
) -> None:
    line, code, request_id = BAD_LINES[case]
    resp = await raw.post(line)
    assert resp.status_code == 400, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    assert_error(resp.json(), code, request_id)  # type: ignore[arg-type]
    await raw.assert_ping()
    session = http_server.sessions[-1]
    assert session.peer.conn.running_incoming == 0
    assert not session.streams.streams  # no request stream left open by the rejected body


@pytest.mark.parametrize(
    ("case", "status"), [("malformed-response", 400), ("notification-bad-params", 400), ("unknown-notification", 202)]
)
async def test_http_unanswerable_messages_and_session_survives(raw: RawHTTP, case: str, status: int) -> None:
    """Over stdio these get no answer at all; an HTTP POST always gets a status (400 refused, 202 taken)."""
    line, code, _id = BAD_LINES[case]
    assert code is None
    resp = await raw.post(line)
    assert resp.status_code == status, resp.text
    await raw.assert_ping()


async def test_http_unknown_method(raw: RawHTTP) -> None:
    answer = await raw.request(req(5, "no/such/method"))
    assert_error(answer, METHOD_NOT_FOUND, 5)
    await raw.assert_ping()


async def test_http_duplicate_request_id_while_first_is_running(raw: RawHTTP, http_server: SupportServer) -> None:
    async with anyio.create_task_group() as tg:
        first: dict[str, Any] = {}

        async def run_first() -> None:
            first.update(await raw.request(call(9, "sleep", seconds=0.5, value="first")))

        tg.start_soon(run_first)
        await wait_until(lambda: 9 in http_server.started, what="the first request to start")
        resp = await raw.post(call(9, "echo", text="second"))
        assert resp.status_code == 400
        assert_error(resp.json(), INVALID_REQUEST, 9)
        await raw.assert_ping()
    assert first == {"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": "first"}]}}
    assert (await raw.request(call(9, "echo", text="third")))["result"]["content"][0]["text"] == "third"


async def test_http_response_to_unknown_id_is_dropped_and_logged(
    raw: RawHTTP, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="elicitkit"):
        resp = await raw.post({"jsonrpc": "2.0", "id": "nope", "result": {}})
        assert resp.status_code == 202
        resp = await raw.post({"jsonrpc": "2.0", "id": 77, "error": {"code": -1, "message": "late"}})
        assert resp.status_code == 202
    assert "response to unknown request id 'nope'" in caplog.text
    assert "response to unknown request id 77" in caplog.text
    await raw.assert_ping()


async def test_http_oversized_body_is_413_then_session_serves(raw: RawHTTP) -> None:
    resp = await raw.post(call(1, "echo", text="x" * (HTTP_LIMIT * 2)))
    assert resp.status_code == 413
    assert resp.json()["error"]["code"] == INVALID_REQUEST
    await raw.assert_ping()

    async def chunks() -> Any:  # no Content-Length: chunked transfer encoding
        body = orjson.dumps(call(2, "echo", text="x" * (HTTP_LIMIT * 10)))
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    resp = await raw.http.post(raw.url, content=chunks(), headers=raw.headers())
    assert resp.status_code == 413
    await raw.assert_ping("ping-2")
    ok = await raw.request(call(3, "echo", text="y" * (HTTP_LIMIT // 2)))
    assert ok["result"]["content"][0]["text"] == "y" * (HTTP_LIMIT // 2)


async def test_http_client_aborts_post_mid_request(raw: RawHTTP, http_server: SupportServer) -> None:
    session = http_server.sessions[-1]
    before = set(tasks_named("_retire_when_done")) | set(tasks_named("_retire.<locals>.later"))
    with anyio.move_on_after(0.3) as scope:  # the POST is abandoned while the tool sleeps
        await raw.post(call("gone", "sleep", seconds=0.6, value="unheard"))
    assert scope.cancelled_caught
    assert "gone" in http_server.started
    # a disconnect is not a cancellation: the handler finishes, and nothing is left running
    await wait_until(lambda: "gone" in http_server.finished, what="the abandoned handler to finish")
    assert "gone" not in http_server.cancelled
    await wait_until(lambda: session.peer.conn.running_incoming == 0, what="running_incoming to return to 0")
    await raw.assert_ping()
    # the finished stream is kept for resumption (retention_seconds=0.3), then dropped
    await wait_until(
        lambda: not (set(tasks_named("_retire_when_done")) | set(tasks_named("_retire.<locals>.later"))) - before,
        what="the retention tasks to end",
    )
    assert not tasks_named("_wait_or_disconnect")
    assert "gone" not in session.streams.streams  # the HTTPSession dropped the request's stream


async def test_http_missing_session_id_is_400(raw: RawHTTP) -> None:
    headers = raw.headers()
    del headers["Mcp-Session-Id"]
    resp = await raw.post(req(1, "ping"), headers=headers)
    assert resp.status_code == 400
    assert_error(resp.json(), INVALID_REQUEST, 1)
    await raw.assert_ping()


async def test_http_unknown_session_is_404(raw: RawHTTP) -> None:
    resp = await raw.post(req(1, "ping"), headers=raw.headers(**{"Mcp-Session-Id": "not-a-session"}))
    assert resp.status_code == 404
    assert_error(resp.json(), INVALID_REQUEST, 1)
    get = await raw.http.get(raw.url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": "not-a-session"})
    assert get.status_code == 404
    await raw.assert_ping()


async def test_http_delete_then_reuse_is_404(raw: RawHTTP, http_server: SupportServer) -> None:
    session = http_server.sessions[-1]
    resp = await raw.delete()
    assert resp.status_code == 200
    await wait_until(lambda: session.peer.closed, what="the session's peer to close")
    resp = await raw.post(req(1, "ping"))
    assert resp.status_code == 404
    assert (await raw.delete()).status_code == 404
    # a new session works
    fresh = RawHTTP(raw.http, raw.url)
    await fresh.initialize()
    await fresh.assert_ping()


async def test_http_delete_without_session_is_400(http: httpx.AsyncClient, http_server: SupportServer) -> None:
    assert (await http.delete(http_server.url)).status_code == 400


@pytest.mark.parametrize("accept", ["text/html", "application/json", "text/event-stream", ""])
async def test_http_post_wrong_accept_is_406(raw: RawHTTP, accept: str) -> None:
    resp = await raw.post(req(1, "ping"), headers=raw.headers(Accept=accept))
    assert resp.status_code == 406
    await raw.assert_ping()


async def test_http_get_wrong_accept_is_406(raw: RawHTTP) -> None:
    resp = await raw.http.get(raw.url, headers=raw.headers(Accept="application/json"))
    assert resp.status_code == 406


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_http_wrong_content_type_is_415(raw: RawHTTP, content_type: str | None) -> None:
    headers = raw.headers()
    if content_type is None:
        del headers["Content-Type"]
    else:
        headers["Content-Type"] = content_type
    resp = await raw.post(req(1, "ping"), headers=headers)
    assert resp.status_code == 415
    await raw.assert_ping()


async def test_http_unsupported_protocol_version_header_is_400(raw: RawHTTP) -> None:
    resp = await raw.post(req(1, "ping"), headers=raw.headers(**{"MCP-Protocol-Version": "1999-01-01"}))
    assert resp.status_code == 400
    assert_error(resp.json(), INVALID_REQUEST, 1)
    await raw.assert_ping()


async def test_http_unsupported_method_is_405(raw: RawHTTP) -> None:
    resp = await raw.http.put(raw.url, content=b"{}", headers=raw.headers())
    assert resp.status_code == 405
    await raw.assert_ping()


async def test_http_initialize_without_session_header_creates_a_new_session(raw: RawHTTP) -> None:
    other = RawHTTP(raw.http, raw.url)
    await other.initialize()
    assert other.session_id != raw.session_id
    await other.assert_ping()
    await raw.assert_ping()


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example.com"}, 421),
        ({"Host": "evil.example.com:80"}, 421),
        ({"Origin": "http://evil.example.com"}, 403),
        ({"Origin": "https://127.0.0.1.evil.example.com"}, 403),
        ({"Host": "localhost"}, 200),
        ({"Origin": "http://localhost:3000"}, 200),
        ({"Origin": "http://127.0.0.1"}, 200),
    ],
)
async def test_http_dns_rebinding_protection(
    http: httpx.AsyncClient, http_server: SupportServer, headers: dict[str, str], status: int
) -> None:
    peer = RawHTTP(http, http_server.url)
    resp = await peer.post(init_request(), headers=peer.headers(**headers))
    assert resp.status_code == status, resp.text
    if status == 200:
        assert "mcp-session-id" in resp.headers
    else:
        assert 400 <= resp.status_code < 500
        assert "mcp-session-id" not in resp.headers
    # the server itself is unaffected
    fresh = RawHTTP(http, http_server.url)
    await fresh.initialize()
    await fresh.assert_ping()


async def test_http_dns_rebinding_guard_covers_every_method(raw: RawHTTP) -> None:
    evil = {"Origin": "http://evil.example.com"}
    assert (await raw.http.get(raw.url, headers=raw.headers(Accept="text/event-stream", **evil))).status_code == 403
    assert (await raw.http.delete(raw.url, headers=raw.headers(**evil))).status_code == 403
    await raw.assert_ping()  # the refused DELETE did not end the session


async def test_http_notifications_before_session_are_rejected(raw: RawHTTP) -> None:
    headers = raw.headers()
    del headers["Mcp-Session-Id"]
    resp = await raw.post(INITIALIZED, headers=headers)
    assert resp.status_code == 400
    await raw.assert_ping()


# ============================================================================= in-process


async def test_memory_response_to_unknown_id_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    server = SupportServer()
    async with Client(server) as client:
        session = server.sessions[-1]
        with caplog.at_level(logging.INFO, logger="elicitkit.peer"):
            await session.peer.feed(b'{"jsonrpc":"2.0","id":"stray","result":{}}')
            await client.peer.feed(b'{"jsonrpc":"2.0","id":"stray","result":{}}')
        assert caplog.text.count("response to unknown request id 'stray'") == 2
        await client.ping()
        assert (await client.call_tool("echo", {"text": "still fine"})).text == "still fine"
