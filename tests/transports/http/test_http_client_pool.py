"""The client's HTTP connections are reused: a call that asks a question streams its response
(SSE) and the answer goes up on a second POST, and once the call is done both connections go
back to the pool. Counted at the TCP level by a relay in front of a server in its own process
(in one event loop with the client, a stream's end always arrives with its last event, which
would hide the defect)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

import anyio
import pytest

from elicitkit import Client, ElicitationResult
from elicitkit.errors import MCPError
from kit.processes import serve_on_free_port

pytestmark = pytest.mark.anyio

CALLS = 20
CHUNKED_END = b"0\r\n\r\n"  # the last chunk of a chunked HTTP body: the response stream's end
END_LAG = 0.02
PAUSE = 0.05


def everything(port: int) -> list[str]:
    return [sys.executable, "-m", "elicitkit.testing.everything", "--host", "127.0.0.1", "--port", str(port)]


@contextlib.asynccontextmanager
async def counting_relay(port: int) -> AsyncIterator[tuple[int, list[int]]]:
    """A TCP relay to 127.0.0.1:``port``; yields its own port and a one-item count of connections."""
    accepted = [0]

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, end_lag: float) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                if end_lag and data.endswith(CHUNKED_END) and len(data) > len(CHUNKED_END):
                    writer.write(data[: -len(CHUNKED_END)])  # the last event now, the end a moment later
                    await writer.drain()
                    await asyncio.sleep(end_lag)
                    data = CHUNKED_END
                writer.write(data)
                await writer.drain()
        writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted[0] += 1
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
        # Towards the client, a stream's end lags its last event, as it can on any network.
        await asyncio.gather(pipe(reader, upstream_writer, 0.0), pipe(upstream_reader, writer, END_LAG))

    relay_server = await asyncio.start_server(relay, "127.0.0.1", 0)
    try:
        yield relay_server.sockets[0].getsockname()[1], accepted
    finally:
        relay_server.close()


async def test_calls_that_ask_reuse_their_connections() -> None:
    async def answer(request: object) -> ElicitationResult:
        return ElicitationResult.accept({"username": "ada", "email": "ada@example.com"})

    with serve_on_free_port(everything, "everything server") as (port, _proc, _log):
        async with counting_relay(port) as (relay_port, accepted):
            async with Client(f"http://127.0.0.1:{relay_port}/mcp", elicitation_callback=answer) as client:
                for i in range(CALLS):
                    result = await client.call_tool("test_elicitation", {"message": f"q{i}"})
                    assert "ada@example.com" in str(result.text), result
                    await anyio.sleep(PAUSE)  # longer than END_LAG: the stream has ended by the next call
            # A new connection per call would make CALLS or more; the pool needs a handful.
            assert accepted[0] <= 4, f"{accepted[0]} connections for {CALLS} calls"


@contextlib.asynccontextmanager
async def relay_closing_idle(port: int, idle_close: float) -> AsyncIterator[tuple[int, list[int]]]:
    """A relay that plays a server's idle close crossing the client's next request: a request
    on a connection idle for ``idle_close`` seconds or more is met with a reset, not an answer.
    Yields its port and a one-item count of the resets."""
    resets = [0]

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
        last = asyncio.get_running_loop().time()

        async def down() -> None:
            nonlocal last
            with contextlib.suppress(OSError):
                while data := await upstream_reader.read(65536):
                    writer.write(data)
                    await writer.drain()
                    last = asyncio.get_running_loop().time()

        answering = asyncio.ensure_future(down())
        try:
            while data := await reader.read(65536):
                if asyncio.get_running_loop().time() - last >= idle_close:
                    resets[0] += 1
                    writer.transport.abort()  # the close was already on its way: a reset
                    return
                upstream_writer.write(data)
                await upstream_writer.drain()
        except OSError:
            pass
        finally:
            answering.cancel()
            upstream_writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], resets
    finally:
        server.close()


async def calls_through_idle_closer(idle_close: float, pause: float, calls: int = 3) -> int:
    """``calls`` calls, ``pause`` seconds apart, through :func:`relay_closing_idle`; how many resets they met."""
    with serve_on_free_port(everything, "everything server") as (port, _proc, _log):
        async with (
            relay_closing_idle(port, idle_close) as (relay_port, resets),
            Client(f"http://127.0.0.1:{relay_port}/mcp") as client,
        ):
            for _ in range(calls):
                result = await client.call_tool("test_simple_text", {})
                assert not result.is_error, result
                await anyio.sleep(pause)
    return resets[0]


async def test_an_idle_connection_is_let_go_before_a_server_would_close_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool drops a connection idle for IDLE_REUSE_SECONDS (4 s, below the 5 s of uvicorn and
    node); scaled down here: the client lets go at 0.3 s, the "server" resets at 0.6 s."""
    import elicitkit.transports.http.client as http_client

    monkeypatch.setattr(http_client, "IDLE_REUSE_SECONDS", 0.3)
    # idle past both between calls: only a connection kept too long would meet the reset
    assert await calls_through_idle_closer(idle_close=0.6, pause=0.9) == 0


async def test_a_request_on_a_pooled_connection_closed_under_it_is_sent_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """However long the pool keeps connections, a request that meets a kept-alive connection's
    close before any answer goes again on a new one: every call after the first meets one here."""
    import elicitkit.transports.http.client as http_client

    monkeypatch.setattr(http_client, "IDLE_REUSE_SECONDS", 60.0)
    assert await calls_through_idle_closer(idle_close=0.3, pause=0.5) >= 2


async def test_a_new_connection_that_fails_is_not_sent_again() -> None:
    """A connection made for the request that then fails may have reached a server that read
    it: the request is not sent a second time, the call fails saying the connection failed."""
    requests = [0]

    async def read_then_drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            await reader.readuntil(b"\r\n\r\n")
            requests[0] += 1
        writer.transport.abort()

    server = await asyncio.start_server(read_then_drop, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(MCPError, match="connection"):
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", timeout=10) as client:
                await client.list_tools()
    finally:
        server.close()
    assert requests == [1]
