"""Bad input to the decorator framework: each mistake gets a precise answer, and the connection lives on.

Every test makes one mistake, checks the error (a JSON-RPC error for protocol mistakes, an
``isError`` result for a tool that could not do its job), then proves the same connection
still works by making a good call on it.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from elicitkit import Client, MCPError, Server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002


class Point(BaseModel):
    x: int
    y: int


def build_server() -> Server:
    server = Server("bad-input", tool_timeout=None)
    server.cancelled_hangs = 0  # type: ignore[attr-defined]
    server.finished_hangs = 0  # type: ignore[attr-defined]

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def move(point: Point, label: str = "") -> str:
        return f"{label}({point.x}, {point.y})"

    @server.tool()
    def explode(reason: str = "boom") -> str:
        raise RuntimeError(f"it went {reason}")

    @server.tool(timeout=0.2)
    async def hang() -> str:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            server.cancelled_hangs += 1  # type: ignore[attr-defined]
            raise
        server.finished_hangs += 1  # type: ignore[attr-defined]
        return "woke up"

    @server.tool(timeout=0.2, thread=True)
    def hang_in_thread() -> str:
        time.sleep(1.5)
        return "woke up"

    @server.resource("users://{user_id}/profile")
    def profile(user_id: int) -> str:
        return f"user {user_id}"

    @server.resource("notes://readme")
    def readme() -> str:
        return "read me"

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    return server


@pytest.fixture
def server() -> Server:
    return build_server()


async def still_works(client: Client) -> None:
    """The connection survived: a ping and a real tool call both succeed."""
    await client.ping()
    result = await client.call_tool("add", {"a": 2, "b": 3})
    assert not result.is_error
    assert result.structured_content == {"result": 5}


async def test_unknown_tool(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("no_such_tool", {"a": 1})
        await still_works(client)
    assert caught.value.code == INVALID_PARAMS
    assert "no_such_tool" in caught.value.message


async def test_tool_name_of_the_wrong_type(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.request("tools/call", {"name": ["add"], "arguments": {"a": 1, "b": 2}})
        await still_works(client)
    assert caught.value.code == INVALID_PARAMS


async def test_arguments_that_are_not_an_object(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.request("tools/call", {"name": "add", "arguments": [1, 2]})
        await still_works(client)
    assert caught.value.code == INVALID_PARAMS
    assert "arguments" in caught.value.message


async def test_unknown_prompt(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("no_such_prompt", {"name": "x"})
        await still_works(client)
        assert (await client.get_prompt("greet", {"name": "Ada"})).messages
    assert caught.value.code == INVALID_PARAMS
    assert "no_such_prompt" in caught.value.message


async def test_prompt_missing_required_argument(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("greet")
        await still_works(client)
    assert caught.value.code == INVALID_PARAMS
    assert "name" in caught.value.message


async def test_unknown_resource(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("notes://missing")
        await still_works(client)
        assert (await client.read_resource("notes://readme")).contents
    assert caught.value.code == RESOURCE_NOT_FOUND
    assert caught.value.data == {"uri": "notes://missing"}


async def test_template_uri_that_does_not_match(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("users://42/profile/extra")
        await still_works(client)
        assert (await client.read_resource("users://42/profile")).contents[0].text == "user 42"  # type: ignore[union-attr]
    assert caught.value.code == RESOURCE_NOT_FOUND
    assert caught.value.data == {"uri": "users://42/profile/extra"}


async def test_resource_uri_of_the_wrong_type(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.request("resources/read", {"uri": 42})
        await still_works(client)
    assert caught.value.code == INVALID_PARAMS


async def test_arguments_of_the_wrong_type(server: Server) -> None:
    async with Client(server) as client:
        result = await client.call_tool("add", {"a": 1, "b": "two"})
        nested = await client.call_tool("move", {"point": {"x": 1, "y": [2]}})
        await still_works(client)
    assert result.is_error
    assert "b: Input should be a valid integer" in result.text
    assert "a:" not in result.text
    assert nested.is_error
    assert "point.y" in nested.text


async def test_missing_required_arguments(server: Server) -> None:
    async with Client(server) as client:
        result = await client.call_tool("add", {"a": 1})
        none = await client.request("tools/call", {"name": "add"})  # no arguments at all
        await still_works(client)
    assert result.is_error
    assert "b: Field required" in result.text
    assert "a:" not in result.text
    assert none["isError"] is True
    text = none["content"][0]["text"]
    assert "a: Field required" in text
    assert "b: Field required" in text


async def test_tool_that_raises(server: Server) -> None:
    async with Client(server) as client:
        result = await client.call_tool("explode", {"reason": "sideways"})
        await still_works(client)
    assert result.is_error
    assert "it went sideways" in result.text
    assert result.structured_content is None


async def test_tool_that_hangs_past_its_timeout(server: Server) -> None:
    async with Client(server) as client:
        started = time.monotonic()
        result = await client.call_tool("hang")
        elapsed = time.monotonic() - started
        await still_works(client)
        second = await client.call_tool("hang")  # and it can time out again
        await still_works(client)
    assert result.is_error
    assert "timed out" in result.text
    assert "hang" in result.text
    assert elapsed < 5
    assert second.is_error
    assert server.cancelled_hangs == 2  # type: ignore[attr-defined]
    assert server.finished_hangs == 0  # type: ignore[attr-defined]


async def test_other_calls_are_served_while_a_tool_hangs(server: Server) -> None:
    results: dict[str, Any] = {}
    async with Client(server) as client:

        async def call_hang() -> None:
            results["hang"] = await client.call_tool("hang")

        async with anyio.create_task_group() as tg:
            tg.start_soon(call_hang)
            await anyio.sleep(0.05)
            results["add"] = await client.call_tool("add", {"a": 1, "b": 1})
            assert "hang" not in results  # add was answered while hang was still running
        await still_works(client)
    assert results["add"].structured_content == {"result": 2}
    assert results["hang"].is_error


async def test_server_wide_tool_timeout() -> None:
    server = Server("slow", tool_timeout=0.2)

    @server.tool()
    async def nap() -> str:
        await anyio.sleep(30)
        return "rested"

    @server.tool()
    def quick() -> str:
        return "quick"

    async with Client(server) as client:
        result = await client.call_tool("nap")
        assert (await client.call_tool("quick")).text == "quick"
    assert result.is_error
    assert "timed out" in result.text


async def test_threaded_tool_that_hangs_past_its_timeout(server: Server) -> None:
    async with Client(server) as client:
        started = time.monotonic()
        result = await client.call_tool("hang_in_thread")
        elapsed = time.monotonic() - started
        await still_works(client)
    assert result.is_error
    assert "timed out" in result.text
    assert elapsed < 1.4  # the thread sleeps 1.5 s; the timeout is 0.2 s
