"""The runners around the endpoint (``serve.py``): read deadlines against connections that
trickle, and logging that is quiet unless asked for."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from elicitkit.transports.http.serve import serve_http_background
from kit.processes import serve_on_free_port
from kit.raw import INITIALIZED, RawHTTP, init_request, req
from support_server import SupportServer

from ._wire import ACCEPT_BOTH, exchange, port_of, post_headers, request_bytes

pytestmark = pytest.mark.anyio

STUCK_SERVER = Path(__file__).resolve().parents[1] / "peers" / "stuck_server.py"
LIMIT = 0.5  # seconds: the header and body deadlines the trickle tests configure


@pytest.fixture
async def server_url() -> AsyncIterator[str]:
    async with serve_http_background(SupportServer(), header_timeout=LIMIT, body_timeout=LIMIT) as handle:
        yield handle.url


async def _trickle(port: int, prefix: bytes, drip: bytes, every: float = 0.2) -> tuple[float, bytes]:
    """Send ``prefix`` at once, then ``drip`` a byte every ``every`` seconds until the server
    closes the connection; (seconds it stayed open, what the server said)."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    said = b""

    async def read_all() -> None:
        nonlocal said
        said = await reader.read(-1)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_all)
            with anyio.move_on_after(15):
                writer.write(prefix)
                for i in range(len(drip)):
                    if reader.at_eof():
                        break
                    writer.write(drip[i : i + 1])
                    try:
                        await writer.drain()
                    except ConnectionError:
                        break
                    await anyio.sleep(every)
                while not reader.at_eof():  # noqa: ASYNC110 - the reader task sets it
                    await anyio.sleep(0.02)
            tg.cancel_scope.cancel()
    finally:
        writer.close()
    return time.monotonic() - started, said


async def test_defect_07_trickling_connections_are_closed(server_url: str) -> None:
    port = port_of(server_url)
    headers = request_bytes("POST", post_headers(port), b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    head, _, _ = headers.partition(b"\r\n\r\n")
    body_prefix = head.replace(b"Content-Length: 40", b"Content-Length: 4000") + b"\r\n\r\n"
    results: dict[str, list[tuple[float, bytes]]] = {"headers": [], "body": [], "silent": []}
    served: list[bool] = []

    async def headers_trickler() -> None:
        results["headers"].append(await _trickle(port, b"", headers))

    async def body_trickler() -> None:
        results["body"].append(await _trickle(port, body_prefix, b"x" * 4000))

    async def silent() -> None:
        results["silent"].append(await _trickle(port, b"", b""))

    async def normal_traffic() -> None:
        async with httpx.AsyncClient(timeout=10) as http:
            await anyio.sleep(0.3)  # while the tricklers hold their sockets
            raw = RawHTTP(http, server_url)
            await raw.initialize()
            for _ in range(5):
                await raw.assert_ping()
                await anyio.sleep(0.1)
            served.append(True)

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(headers_trickler)
            tg.start_soon(body_trickler)
        for _ in range(2):
            tg.start_soon(silent)
        tg.start_soon(normal_traffic)

    assert served == [True]
    for kind, outcomes in results.items():
        for seconds, said in outcomes:
            assert seconds < LIMIT + 2.5, (kind, seconds)  # closed near the deadline, not held
            assert said.startswith(b"HTTP/1.1 408 "), (kind, said[:80])


async def test_defect_07_a_request_that_arrives_in_time_is_served(server_url: str) -> None:
    port = port_of(server_url)
    raw = request_bytes("POST", post_headers(port), json.dumps(init_request()).encode())
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for i in range(0, len(raw), len(raw) // 3 + 1):  # in three pieces, within the deadlines
            writer.write(raw[i : i + len(raw) // 3 + 1])
            await writer.drain()
            await anyio.sleep(LIMIT / 5)
        answer = await asyncio.wait_for(reader.read(-1), 10)
    finally:
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


async def test_defect_07_kept_alive_connection_gets_a_fresh_header_deadline(server_url: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:  # one pooled connection
        raw = RawHTTP(http, server_url)
        await raw.initialize()
        for _ in range(4):  # spread over more than the deadline, on the same connection
            await anyio.sleep(LIMIT / 2)
            await raw.assert_ping()


async def test_defect_07_header_block_is_capped(server_url: str) -> None:
    port = port_of(server_url)
    body = json.dumps(init_request()).encode()
    roomy = request_bytes("POST", [*post_headers(port), ("X-Pad", "a" * 20_000)], body)
    assert (await exchange(port, roomy))[0] == 200
    huge = request_bytes("POST", [*post_headers(port), ("X-Pad", "a" * 1_000_000)], body)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(huge)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        try:
            answer = await asyncio.wait_for(reader.read(-1), 10)
        except ConnectionResetError:  # closed with our unread bytes in its buffer: the kernel resets
            answer = b"reset"
    finally:
        writer.close()
    assert answer.startswith(b"HTTP/1.1 431 ") or answer == b"reset", answer[:100]


def test_defect_07_default_deadlines() -> None:
    from elicitkit.transports.http.serve import DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT

    assert (DEFAULT_HEADER_TIMEOUT, DEFAULT_BODY_TIMEOUT) == (10.0, 30.0)


# -- defect 10: logging ---------------------------------------------------------------------


def _run_and_log(options: dict[str, Any]) -> str:
    """Serve ``stuck_server.py`` over HTTP with ``options``, make a few requests, stop it with
    SIGTERM; everything it wrote to stdout and stderr."""
    argv = lambda port: [sys.executable, str(STUCK_SERVER), "http", str(port), json.dumps(options)]  # noqa: E731
    with serve_on_free_port(argv, "stuck_server.py") as (port, proc, log):
        url = f"http://127.0.0.1:{port}/mcp"
        with httpx.Client(timeout=10) as http:
            headers = {"Accept": ACCEPT_BOTH, "Content-Type": "application/json"}
            init = http.post(url, json=init_request(), headers=headers)
            assert init.status_code == 200
            headers |= {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
            assert http.post(url, json=INITIALIZED, headers=headers).status_code == 202
            for i in range(3):
                assert http.post(url, json=req(i, "ping"), headers=headers).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        log.seek(0)
        return log.read().decode(errors="replace")


def test_defect_10_default_server_writes_no_access_log() -> None:
    output = _run_and_log({})
    assert '"POST /mcp' not in output, output
    assert "INFO" not in output, output


def test_defect_10_access_log_and_log_level_are_configurable() -> None:
    output = _run_and_log({"access_log": True, "log_level": "info"})
    assert output.count('"POST /mcp HTTP/1.1" 200') == 4, output  # initialize and three pings
    # uvicorn's own INFO lines; the address is said by elicitkit (uvicorn serves a socket bound
    # beforehand, so that a taken port is one clear error, and then logs no "running on")
    assert "INFO:     Application startup complete." in output, output
    assert "serving MCP at http://127.0.0.1:" in output, output


async def test_defect_10_background_server_takes_the_same_options() -> None:
    async with serve_http_background(SupportServer(), log_level="error", access_log=False) as handle:
        status, _, _ = await exchange(
            port_of(handle.url), request_bytes("POST", post_headers(port_of(handle.url)), b"{}")
        )
    assert status == 400


async def test_connections_on_our_own_listening_socket_have_nagle_off() -> None:
    """serve_http binds its socket itself; asyncio turns Nagle off only where the socket's proto
    says TCP. With it on, a question written before the result waited for the client's delayed
    ACK: S1 through ``elicitkit serve --transport http`` took 44 ms a call instead of about 1."""
    import socket

    from elicitkit.transports.http.serve import _bind

    sock = _bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    seen: list[int] = []

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=sock)
    async with server:
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        with anyio.fail_after(5):
            while not seen:  # noqa: ASYNC110 (the callback records it)
                await anyio.sleep(0.01)
        writer.close()
    assert seen and seen[0] != 0


KEEP_ALIVE = 0.4  # seconds: uvicorn's timeout_keep_alive, shortened for the keep-alive test


async def _kept_alive_exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> int:
    """One request on a kept-alive connection (no ``Connection: close``); its status."""
    writer.write(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
    await asyncio.wait_for(reader.readexactly(length), 5)
    return int(lines[0].split()[1])


async def test_kept_alive_connection_closes_after_idling_not_while_in_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """The keep-alive timer is lazy (one per timeout, not one per request): a connection used
    more often than the timeout stays open past it, and one left idle closes about that long
    after its last response."""
    from elicitkit.transports.http import serve as serve_module

    made = serve_module._config

    def short_keep_alive(*args: Any, **kwargs: Any) -> Any:
        config = made(*args, **kwargs)
        config.timeout_keep_alive = KEEP_ALIVE
        return config

    monkeypatch.setattr(serve_module, "_config", short_keep_alive)
    async with serve_http_background(SupportServer()) as handle:
        port = port_of(handle.url)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            started = time.monotonic()
            while time.monotonic() - started < 3 * KEEP_ALIVE:  # in use well past the timeout
                assert await _kept_alive_exchange(reader, writer, port) == 400  # (a GET without a session)
                await asyncio.sleep(KEEP_ALIVE / 3)
            last = time.monotonic()
            assert await _kept_alive_exchange(reader, writer, port) == 400  # still the same connection
            closed = await asyncio.wait_for(reader.read(), 5)  # then idle: b"" once the server closes
            idled = time.monotonic() - last
        finally:
            writer.close()
    assert closed == b""
    assert KEEP_ALIVE * 0.9 <= idled < KEEP_ALIVE + 1.0, idled


async def test_responses_carry_a_date_but_do_not_name_the_server_software() -> None:
    async with serve_http_background(SupportServer()) as handle, httpx.AsyncClient(timeout=10) as http:
        answer = await http.get(handle.url, headers={"accept": "text/event-stream"})
    assert answer.status_code == 400  # (a GET without a session)
    assert "date" in answer.headers
    assert "server" not in answer.headers, answer.headers.get("server")
