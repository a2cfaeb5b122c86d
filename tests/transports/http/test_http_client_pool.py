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
from kit.processes import serve_on_free_port

pytestmark = pytest.mark.anyio

CALLS = 20
CHUNKED_END = b"0\r\n\r\n"  # the last chunk of a chunked HTTP body: the response stream's end
END_LAG = 0.02
PAUSE = 0.05


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

    argv = lambda port: [  # noqa: E731
        sys.executable, "-m", "elicitkit.testing.everything", "--host", "127.0.0.1", "--port", str(port)
    ]  # fmt: skip
    with serve_on_free_port(argv, "everything server") as (port, _proc, _log):
        async with counting_relay(port) as (relay_port, accepted):
            async with Client(f"http://127.0.0.1:{relay_port}/mcp", elicitation_callback=answer) as client:
                for i in range(CALLS):
                    result = await client.call_tool("test_elicitation", {"message": f"q{i}"})
                    assert "ada@example.com" in str(result.text), result
                    await anyio.sleep(PAUSE)  # longer than END_LAG: the stream has ended by the next call
            # A new connection per call would make CALLS or more; the pool needs a handful.
            assert accepted[0] <= 4, f"{accepted[0]} connections for {CALLS} calls"
