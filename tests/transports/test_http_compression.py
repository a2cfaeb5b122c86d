"""Our HTTP client against a server behind gzip middleware: bodies must still parse."""

from __future__ import annotations

import socket

import anyio
import pytest
import uvicorn
from starlette.middleware.gzip import GZipMiddleware

from elicitkit import Client, Server

pytestmark = pytest.mark.anyio


def _server() -> Server:
    server = Server("big")

    @server.tool()
    def big() -> str:
        return "x" * 20_000  # well over GZipMiddleware's minimum size

    return server


async def test_large_answer_through_gzip_middleware() -> None:
    app = _server().asgi_app()
    app.add_middleware(GZipMiddleware, minimum_size=100)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    userver = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(userver.serve)
        with anyio.fail_after(10):
            while not userver.started:  # noqa: ASYNC110 - uvicorn offers no started event
                await anyio.sleep(0.01)
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                result = await client.call_tool("big")
        userver.should_exit = True
    assert result.text == "x" * 20_000
