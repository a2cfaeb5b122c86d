"""A 2026 client cancels a request over HTTP by closing its response stream (there is no
``notifications/cancelled`` on 2026 HTTP): the server's handler must hear it and stop."""

from __future__ import annotations

import anyio
import pytest

from elicitkit import Client, Server
from elicitkit.transports.http.serve import serve_http_background

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


async def test_cancelling_a_call_stops_the_tool_at_the_server() -> None:
    server = Server("slow")
    started, stopped = anyio.Event(), anyio.Event()

    @server.tool()
    async def wait() -> str:
        started.set()
        try:
            await anyio.sleep(60)
        finally:
            stopped.set()
        return "waited"

    async with serve_http_background(server, port=0) as served, Client(served.url, mode="modern") as client:
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "wait")
            with anyio.fail_after(10):
                await started.wait()
            group.cancel_scope.cancel()
        with anyio.fail_after(10):
            await stopped.wait()  # the stream closed: the server cancelled the tool
