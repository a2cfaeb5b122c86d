"""A legacy question parked over HTTP holds its connection, its request's task, its stream and
the tool's frame: nothing more (issue 27).

Each parked question is a ``tools/call`` whose tool asks (``ctx.elicit``) and waits: its SSE
response is open, the question written, the answer not sent. The endpoint used to watch every
such request for a disconnect with a task of its own (a coroutine reading ``receive()``, another
inside uvicorn, a future, a weak reference: about 1.2 KiB a question, tracemalloc), and wrap the
request in uvicorn's proxy-header middleware frame. Under our uvicorn protocol the connection
now tells the endpoint when it is lost; under any other server (a :func:`create_app` app), the
watcher task is still how a disconnect is noticed.

The client is raw sockets in a thread (it allocates next to nothing in the event loop), so the
tasks and blocks counted are the server's.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import orjson
import pytest

from elicitkit.transports.http.serve import create_app, serve_http_background
from elicitkit.transports.http.sessions import RETIRE_WHEN_DONE_TASK
from kit.booking import booking_server
from kit.raw import INITIALIZED, call, init_request, tasks_named, wait_until

pytestmark = pytest.mark.anyio

PARKED = 200


def _post(port: int, message: dict[str, object], session_id: str | None) -> bytes:
    body = orjson.dumps(message)
    head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len(body)}\r\n"
    head += "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
    if session_id is not None:
        head += f"Mcp-Session-Id: {session_id}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
    return head.encode() + b"\r\n" + body


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection before {marker!r}: {data[-300:]!r}"
        data += chunk
    return data


def _open_session(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_post(port, init_request(elicitation={"form": {}}), None))
        head = _read_until(sock, b"\r\n\r\n").split(b"\r\n\r\n", 1)[0].decode()
        fields = dict(line.split(": ", 1) for line in head.split("\r\n")[1:])
        session_id = {k.lower(): v for k, v in fields.items()}["mcp-session-id"]
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_post(port, INITIALIZED, session_id))
        assert _read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 202")
    return session_id


def _park(port: int, session_id: str, first: int, n: int) -> list[socket.socket]:
    """``n`` calls, a connection each, every one read up to its question (then left waiting)."""
    socks = []
    for i in range(first, first + n):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(_post(port, call(f"c{i}", "book", date=f"d{i}"), session_id))
        socks.append(sock)
    for sock in socks:
        assert b"elicitation/create" in _read_until(sock, b"elicitation/create")
    return socks


def _blocks() -> int:
    gc.collect()
    return sys.getallocatedblocks()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


@asynccontextmanager
async def ours() -> AsyncIterator[int]:
    async with serve_http_background(booking_server("parked")) as handle:
        yield _port(handle.url)


@asynccontextmanager
async def plain_uvicorn() -> AsyncIterator[int]:
    """The mountable app under uvicorn's own protocol and middleware: no disconnect hook."""
    import uvicorn

    config = uvicorn.Config(create_app(booking_server("parked")), host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        await wait_until(lambda: server.started, what="uvicorn to start")
        try:
            yield server.servers[0].sockets[0].getsockname()[1]
        finally:
            server.should_exit = True


def _tasks() -> int:
    return len(asyncio.all_tasks())


async def test_a_parked_question_holds_one_task_and_no_more_per_request() -> None:
    async with ours() as port:
        session_id = await anyio.to_thread.run_sync(_open_session, port)
        warm = await anyio.to_thread.run_sync(_park, port, session_id, 0, 20)  # imports, first-use caches
        tasks_before, blocks_before = _tasks(), _blocks()
        socks = await anyio.to_thread.run_sync(_park, port, session_id, 100, PARKED)
        try:
            tasks, blocks = _tasks() - tasks_before, _blocks() - blocks_before
        finally:
            for sock in warm + socks:
                sock.close()
    # The request's task (uvicorn's) and the tool call's (the session's): before, a third one
    # watched each request's receive() for a disconnect.
    assert tasks == 2 * PARKED, tasks
    # Measured 89-90 pymalloc blocks a parked question (connection, request, session, stream,
    # question, the tool's frame); before, 109-110 (a timer per question with its argument tuple,
    # bound method and float, the question's JSON kept beside its message, uvicorn's task name,
    # done-callback method and context copy, the connection's own copies of both addresses, the
    # request's event id, body bytearray and method string); before that, 118-119 (the
    # endpoint's __call__ frame above its pump frame, the question's two bound methods, the
    # tool's validated arguments kept by run_tool) and before that 145-146 (the watcher task
    # and its coroutines, uvicorn's proxy-header frame, the stream's wait frame, the request's
    # whole scope, the connection's HTTP parser).
    assert blocks / PARKED < 93, blocks / PARKED


@pytest.mark.parametrize("serve", [ours, plain_uvicorn], ids=["our-uvicorn-protocol", "plain-uvicorn"])
async def test_a_parked_question_whose_client_goes_away_is_noticed(serve: Callable[[], object]) -> None:
    """Legacy: a dropped connection is not a cancellation; the stream is kept for resumption
    until its request ends (a retention watch starts), whichever way the endpoint noticed."""
    async with serve() as port:  # type: ignore[attr-defined]
        session_id = await anyio.to_thread.run_sync(_open_session, port)
        socks = await anyio.to_thread.run_sync(_park, port, session_id, 0, 3)
        before = len(tasks_named(RETIRE_WHEN_DONE_TASK))
        socks[1].close()
        await wait_until(lambda: len(tasks_named(RETIRE_WHEN_DONE_TASK)) == before + 1, what="the drop to be noticed")
        for sock in socks:
            sock.close()
        await wait_until(lambda: len(tasks_named(RETIRE_WHEN_DONE_TASK)) == before + 3, what="every drop noticed")


def _event_with(sock: socket.socket, data: bytes, marker: bytes) -> tuple[dict[str, object], bytes]:
    """The first SSE ``data:`` line holding ``marker``, complete (the body is chunked: read on
    until its line ends), decoded; and what was read after it."""
    while True:
        at = data.find(marker)
        if at >= 0:
            line_start = data.rfind(b"data: ", 0, at) + len(b"data: ")
            line_end = data.find(b"\n", at)
            if line_end >= 0:
                return orjson.loads(data[line_start:line_end]), data[line_end:]
        chunk = sock.recv(65536)
        assert chunk, f"the stream ended before {marker!r}: {data[-300:]!r}"
        data += chunk


def _ask_answer_and_read_result(port: int, session_id: str, then_ping: bool = False) -> dict[str, object]:
    """One call: read its question off its stream, answer it, and return the call's result
    (``then_ping``: and a ping's answer, on the same kept-alive connection)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_post(port, call("c0", "book", date="d0"), session_id))
        asked, rest = _event_with(sock, b"", b"elicitation/create")
        content = {"name": "Ada", "party_size": 2}
        answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": content}}
        with socket.create_connection(("127.0.0.1", port)) as other:
            other.sendall(_post(port, answer, session_id))
            assert _read_until(other, b"\r\n\r\n").startswith(b"HTTP/1.1 202")
        result, rest = _event_with(sock, rest, b'"result"')
        if then_ping:
            while b"0\r\n\r\n" not in rest:  # the SSE answer's last chunk: the connection is free again
                rest += _read_until(sock, b"0\r\n\r\n")
            sock.sendall(_post(port, {"jsonrpc": "2.0", "id": "p", "method": "ping"}, session_id))
            head, _, body = _read_until(sock, b"\r\n\r\n").partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            while not body.endswith(b"}"):
                body += sock.recv(65536)
            return {"call": result, "ping": orjson.loads(body)}
        return result


async def test_a_parked_question_is_answered_with_the_access_log_on() -> None:
    """The scope of a request whose SSE answer has started is cut to what uvicorn still reads
    per message; its access log line (written as the answer starts) still has everything."""
    import logging

    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    access = logging.getLogger("uvicorn.access")
    async with serve_http_background(booking_server("parked"), access_log=True, log_level="info") as handle:
        collect = Collect()
        access.addHandler(collect)  # (uvicorn set up its loggers as it started; its own don't propagate)
        try:
            port = _port(handle.url)
            session_id = await anyio.to_thread.run_sync(_open_session, port)
            result = await anyio.to_thread.run_sync(_ask_answer_and_read_result, port, session_id)
        finally:
            access.removeHandler(collect)
    assert result["id"] == "c0"
    assert result["result"]["content"][0]["text"] == "booked 2 for Ada on d0"  # type: ignore[index]
    # initialize 200, initialized 202, the call 200 (its SSE answer), the answer to the question 202
    assert [line.rsplit('" ', 1)[1] for line in lines if '"POST /mcp HTTP/1.1"' in line] == ["200", "202", "200", "202"]


async def test_the_connection_of_an_answered_question_serves_its_next_request() -> None:
    """A waiting request's connection let go of its HTTP parser; the next request on it is
    parsed by a fresh one."""
    async with ours() as port:
        session_id = await anyio.to_thread.run_sync(_open_session, port)
        both = await anyio.to_thread.run_sync(_ask_answer_and_read_result, port, session_id, True)
    assert both["call"]["result"]["content"][0]["text"] == "booked 2 for Ada on d0"  # type: ignore[index]
    assert both["ping"] == {"jsonrpc": "2.0", "id": "p", "result": {}}


def _ids_and_question(data: bytes) -> tuple[list[str], dict[str, object]]:
    """The SSE event ids read so far, and the question's message (decoded)."""
    ids = [line[len(b"id: ") :].strip().decode() for line in data.split(b"\n") if line.startswith(b"id: ")]
    at = data.find(b"elicitation/create")
    start = data.rfind(b"data: ", 0, at) + len(b"data: ")
    return ids, orjson.loads(data[start : data.find(b"\n", at)])


def _drop_resume_and_answer(
    port: int, session_id: str
) -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
    """Park a call, drop its connection after the question, resume the stream from the priming
    event: the question again (the stream kept it as its message), then answer it there."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_post(port, call("c0", "book", date="d0"), session_id))
        data = _read_until(sock, b"elicitation/create")
        while data.find(b"\n", data.find(b"elicitation/create")) < 0:
            data += sock.recv(65536)
    ids, first = _ids_and_question(data)
    priming = ids[0]
    assert priming.endswith("/0"), ids
    with socket.create_connection(("127.0.0.1", port)) as sock:
        head = f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
        head += f"Mcp-Session-Id: {session_id}\r\nMCP-Protocol-Version: 2025-11-25\r\nLast-Event-ID: {priming}\r\n\r\n"
        sock.sendall(head.encode())
        data = _read_until(sock, b"elicitation/create")
        assert data.startswith(b"HTTP/1.1 200"), data[:200]
        while data.find(b"\n", data.find(b"elicitation/create")) < 0:
            data += sock.recv(65536)
        _, again = _ids_and_question(data)
        content = {"name": "Ada", "party_size": 2}
        answer = {"jsonrpc": "2.0", "id": again["id"], "result": {"action": "accept", "content": content}}
        with socket.create_connection(("127.0.0.1", port)) as other:
            other.sendall(_post(port, answer, session_id))
            assert _read_until(other, b"\r\n\r\n").startswith(b"HTTP/1.1 202")
        result, _ = _event_with(sock, b"", b'"result"')
    return first, again, result


async def test_a_parked_question_resumed_after_a_drop_is_asked_again_and_answered() -> None:
    async with ours() as port:
        session_id = await anyio.to_thread.run_sync(_open_session, port)
        first, again, result = await anyio.to_thread.run_sync(_drop_resume_and_answer, port, session_id)
    assert again == first and first["method"] == "elicitation/create"
    assert result["id"] == "c0"
    assert result["result"]["content"][0]["text"] == "booked 2 for Ada on d0"  # type: ignore[index]


async def test_parked_requests_run_in_named_tasks_that_uvicorn_forgets_when_they_end() -> None:
    """uvicorn's task per request has one constant name (no ``Task-N`` string each) and leaves
    uvicorn's set of running tasks when it ends (the shared done callback)."""
    from elicitkit.transports.http.serve import REQUEST_TASK

    async with ours() as port:
        session_id = await anyio.to_thread.run_sync(_open_session, port)
        before = len(tasks_named(REQUEST_TASK))
        socks = await anyio.to_thread.run_sync(_park, port, session_id, 10, 5)
        assert len(tasks_named(REQUEST_TASK)) == before + 5
        answer = await anyio.to_thread.run_sync(_ask_answer_and_read_result, port, session_id)
        assert answer["id"] == "c0"
        for sock in socks:
            sock.close()
        await wait_until(lambda: len(tasks_named(REQUEST_TASK)) == before, what="the parked requests to end")
