"""Our client and a refused answer (issue 28, point 3): a 4xx/5xx on the POST that carries the
answer to the server's question used to be logged and forgotten, and the call waited for a
result that could not come (600 s). Now the answer is posted again for a while (a fleet refuses
it with 503 while its Redis restarts), and if it stays refused, the call that was answering
fails with an error naming the refusal. A proxy in front of a real server refuses the answers."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import anyio
import orjson
import pytest
from aiohttp import web

from elicitkit import Client, Context, ElicitationResult, MCPError, Server
from elicitkit.transports.http import client as http_client
from elicitkit.transports.http.serve import serve_http_background

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def build() -> Server:
    server = Server("refusing")

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("anything?", str)
        return f"got {answer.data}"

    return server


@contextlib.asynccontextmanager
async def refusing_proxy(upstream: str, refusals: list[int]) -> AsyncIterator[str]:
    """Forwards everything to ``upstream``, except that each POSTed JSON-RPC response gets the
    next status of ``refusals`` (503...) while any is left."""

    async def forward(request: web.Request) -> web.StreamResponse:
        if request.method == "GET":  # no standalone stream through here (it would outlive the test)
            return web.Response(status=405)
        body = await request.read()
        if request.method == "POST" and refusals:
            message = orjson.loads(body) if body else {}
            if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
                status = refusals.pop(0)
                error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "cannot reach it now"}}
                return web.json_response(error, status=status)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        async with (
            aiohttp.ClientSession(auto_decompress=False) as session,
            session.request(request.method, upstream, data=body, headers=headers) as resp,
        ):
            out = web.StreamResponse(status=resp.status)
            for name, value in resp.headers.items():
                if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                    out.headers[name] = value
            await out.prepare(request)
            async for chunk in resp.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    app = web.Application()
    app.router.add_route("*", "/mcp", forward)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        await runner.cleanup()


async def _answer(request: Any) -> ElicitationResult[Any]:
    return ElicitationResult.accept({"value": "yes"})


async def test_an_answer_refused_for_a_moment_is_posted_again_and_taken() -> None:
    refusals = [503, 503, 404]
    async with (
        serve_http_background(build(), port=0) as served,
        refusing_proxy(served.url, refusals) as url,
        Client(url, mode="legacy", elicitation_callback=_answer) as client,
    ):
        with anyio.fail_after(15):
            assert (await client.call_tool("ask", {})).text == "got yes"
    assert refusals == []  # all three refusals were met, and the fourth post was taken


async def test_an_answer_that_stays_refused_fails_the_call_it_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_client, "ANSWER_RETRY_SECONDS", 1.0)
    refusals = [503] * 1000
    async with (
        serve_http_background(build(), port=0) as served,
        refusing_proxy(served.url, refusals) as url,
        Client(url, mode="legacy", elicitation_callback=_answer) as client,
    ):
        started = time.monotonic()
        with anyio.fail_after(15), pytest.raises(MCPError) as info:
            await client.call_tool("ask", {})
        assert time.monotonic() - started < 5
    assert "refused the answer to its question (HTTP 503)" in info.value.message
    assert "cannot reach it now" in info.value.message
    assert len(refusals) < 1000  # it did post again before giving up
