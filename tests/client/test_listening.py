"""``Client.listen``: one stream of a server's changes on every era and transport.

2026-07-28 is a ``subscriptions/listen`` request (closed when the block is left: over HTTP, by
closing its response stream); 2025 is the session's own notifications plus
``resources/subscribe``. The servers here count their open listen streams and subscriptions, so
the tests see the server side of both.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from elicitkit import Client, Server
from elicitkit.client.listening import Change, Listening
from elicitkit.protocol import subscriptions as subs
from elicitkit.protocol.errors import METHOD_NOT_FOUND, MCPError
from elicitkit.transports.http.serve import serve_http_background

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

URI = "note://one"


def changing_server() -> Server:
    server = Server("changing")

    @server.tool()
    async def change_tools() -> str:
        await server.notify_tools_changed()
        return "ok"

    @server.tool()
    async def touch(uri: str) -> str:
        await server.notify_resource_updated(uri)
        return "ok"

    @server.tool()
    async def streams() -> int:
        return len(server.listeners)

    @server.tool()
    async def subscribed(uri: str) -> int:
        return sum(uri in session.subscriptions for session in server.live_sessions())

    @server.resource(URI)
    def one() -> str:
        return "one"

    return server


@pytest.fixture(params=["memory", "http"])
async def target(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    server = changing_server()
    if request.param == "memory":
        yield server
        return
    async with serve_http_background(server, port=0) as served:
        yield served.url


async def number(client: Client, tool: str, **arguments: Any) -> int:
    return int((await client.call_tool(tool, arguments)).text)


async def next_change(changes: Any) -> Change:
    with anyio.fail_after(5):
        return await changes.__anext__()  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_list_changes_and_updates_arrive_once_per_kind_and_uri(target: Any, mode: str) -> None:
    async with Client(target, mode=mode) as client, client.listen(tools=True, resource_uris=[URI]) as changes:  # type: ignore[arg-type]
        assert changes.agreed.tools_list_changed and changes.agreed.resource_subscriptions == (URI,)
        assert not changes.agreed.prompts_list_changed  # not asked for: not sent
        await client.call_tool("change_tools")
        await client.call_tool("change_tools")  # unread: the first one stands for both
        await client.call_tool("touch", {"uri": URI})
        await client.call_tool("touch", {"uri": "note://other"})  # not asked for
        first = await next_change(changes)
        second = await next_change(changes)
        assert (first.kind, first.uri) == ("tools", None)
        assert (second.kind, second.uri) == ("resource", URI)
        await anyio.sleep(0.2)
        assert not changes.waiting()  # the duplicate and the other URI never came
        if mode == "modern":
            assert await number(client, "streams") == 1
        else:
            assert await number(client, "subscribed", uri=URI) == 1


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_leaving_the_block_ends_the_stream_at_the_server(target: Any, mode: str) -> None:
    async with Client(target, mode=mode) as client:  # type: ignore[arg-type]
        async with client.listen(tools=True, resource_uris=[URI]), client.listen(resource_uris=[URI]):
            pass
        if mode == "modern":  # over HTTP, only closing the response stream tells the server
            await wait_until_zero(client, "streams")
        else:
            assert await number(client, "subscribed", uri=URI) == 0  # the last stream unsubscribed
        async with client.listen(tools=True) as changes:  # and a new stream works
            await client.call_tool("change_tools")
            assert (await next_change(changes)).kind == "tools"


async def wait_until_zero(client: Client, tool: str) -> None:
    counts: list[int] = []

    async def check() -> None:
        counts.append(await number(client, tool))

    with anyio.fail_after(5):
        while True:
            await check()
            if counts[-1] == 0:
                return
            await anyio.sleep(0.05)


async def test_two_streams_each_get_their_own_changes() -> None:
    client = Client(changing_server(), mode="modern")
    async with client, client.listen(tools=True) as tools, client.listen(resource_uris=[URI]) as notes:
        await client.call_tool("touch", {"uri": URI})
        await client.call_tool("change_tools")
        assert (await next_change(notes)).uri == URI
        assert (await next_change(tools)).kind == "tools"
        await anyio.sleep(0.1)
        assert not tools.waiting() and not notes.waiting()


async def test_a_server_that_refuses_to_listen_is_an_error_on_entry() -> None:
    server = changing_server()

    async def refuse(scope: Any) -> Any:
        raise MCPError(METHOD_NOT_FOUND, "no listening here")

    server.set_request_handler(subs.LISTEN, refuse)
    async with Client(server, mode="modern") as client:
        with pytest.raises(MCPError, match="no listening here"):
            async with client.listen(tools=True):
                pytest.fail("entered a stream the server refused")
        assert not client._listening  # nothing left behind


async def test_a_server_that_never_acknowledges_times_out_on_entry() -> None:
    server = changing_server()

    async def silent(scope: Any) -> Any:
        await anyio.sleep_forever()

    server.set_request_handler(subs.LISTEN, silent)
    async with Client(server, mode="modern") as client:
        with pytest.raises(TimeoutError):
            async with client.listen(tools=True, timeout=0.3):
                pytest.fail("entered a stream the server never acknowledged")
        assert not client._listening


DYING_SERVER = """
import os
from elicitkit import Server
server = Server("dying")

@server.tool()
async def die() -> str:
    os._exit(1)

server.run()
"""


async def test_the_stream_fails_when_the_server_goes_away() -> None:
    client = Client([sys.executable, "-c", DYING_SERVER], mode="modern")
    async with client, client.listen(tools=True) as changes:
        with pytest.raises(MCPError):
            await client.call_tool("die")
        with anyio.fail_after(10), pytest.raises(MCPError):
            async for _ in changes:
                pytest.fail("a change from a server that is gone")


def test_a_malformed_acknowledgement_is_refused() -> None:
    heard: list[Any] = []
    listening = Listening()
    listening._acks[7] = heard.append
    listening.deliver(subs.ACKNOWLEDGED, {"_meta": {subs.SUBSCRIPTION_ID_META: 7}, "notifications": "all"})
    assert len(heard) == 1
    with pytest.raises(MCPError, match="acknowledged"):
        subs.parse_acknowledgement(heard[0])


def test_a_change_tagged_for_no_open_stream_is_dropped() -> None:
    listening = Listening()
    listening.deliver(subs.TOOLS_LIST_CHANGED, {"_meta": {subs.SUBSCRIPTION_ID_META: 99}})
    assert not listening
