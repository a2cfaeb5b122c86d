"""Issue 12 #12: malformed params get -32602 with a clear message, never -32603 with Python internals.

Frames go in as raw bytes (a real client could not even encode some of them: orjson refuses to
write arguments nested 1,000 deep), straight into a server session as a transport would feed it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
import pytest

from elicitkit import Server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]

INVALID_PARAMS = -32602
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}


def build_server() -> tuple[Server, list[Any]]:
    server = Server("invalid-params")
    seen: list[Any] = []

    @server.tool()
    def take(a: dict[str, Any]) -> str:
        return "took it"

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello, {name}"

    @server.completion()
    def complete(ref: Any, name: str, value: str, context: dict[str, str]) -> list[str]:
        seen.append((name, value, context))
        return [value.upper()]

    return server, seen


class RawSession:
    """A server session fed raw frames; ``ask`` returns the answer to one frame."""

    def __init__(self, server: Server) -> None:
        self.answers: dict[Any, dict[str, Any]] = {}
        self.arrived = anyio.Event()

        async def deliver(message: dict[str, Any], related: Any) -> None:
            self.answers[message.get("id")] = message
            self.arrived.set()

        self.session = server.create_session(deliver)

    async def ask(self, request_id: Any, frame: bytes) -> dict[str, Any]:
        await self.session.peer.feed(frame)
        with anyio.fail_after(5):
            while request_id not in self.answers:
                self.arrived = anyio.Event()
                await self.arrived.wait()
        return self.answers.pop(request_id)


@asynccontextmanager
async def raw_session(server: Server) -> AsyncIterator[RawSession]:
    raw = RawSession(server)
    async with raw.session.peer:
        yield raw


def complete_frame(request_id: int, meta: bool, **params: Any) -> bytes:
    body: dict[str, Any] = {"ref": {"type": "ref/prompt", "name": "greet"}, **params}
    if meta:
        body["_meta"] = META
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": "completion/complete", "params": body})


async def initialized(raw: RawSession, modern: bool) -> None:
    if modern:
        return
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    await raw.ask(0, orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
    await raw.session.peer.feed(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')


async def test_defect_12a_deeply_nested_2026_arguments_are_invalid_params() -> None:
    """The arguments digest recursed ~1,000 levels: -32603 "maximum recursion depth exceeded"."""
    server, _ = build_server()
    deep = b'{"a":' * 1000 + b"1" + b"}" * 1000
    frame = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"take","arguments":{"a":'
        + deep
        + b'},"_meta":'
        + orjson.dumps(META)
        + b"}}"
    )
    async with raw_session(server) as raw:
        answer = await raw.ask(1, frame)
        fine = await raw.ask(2, frame.replace(deep, b"{}").replace(b'"id":1', b'"id":2'))
    assert answer["error"]["code"] == INVALID_PARAMS, answer
    assert "nest too deeply" in answer["error"]["message"]
    assert "recursion" not in answer["error"]["message"]
    assert fine["result"]["content"][0]["text"] == "took it"


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("context", ["oops", 5, ["a"], {"arguments": "oops"}, {"arguments": {"x": 1}}])
async def test_defect_12b_completion_context_that_is_not_an_object_is_invalid_params(
    modern: bool, context: Any
) -> None:
    """``context: "oops"`` answered -32603 "'str' object has no attribute 'get'"."""
    server, seen = build_server()
    async with raw_session(server) as raw:
        await initialized(raw, modern)
        answer = await raw.ask(1, complete_frame(1, modern, argument={"name": "name", "value": "a"}, context=context))
        fine = await raw.ask(2, complete_frame(2, modern, argument={"name": "name", "value": "a"}))
    assert answer["error"]["code"] == INVALID_PARAMS, answer
    assert "context" in answer["error"]["message"] and "attribute" not in answer["error"]["message"]
    assert fine["result"]["completion"]["values"] == ["A"]
    assert seen == [("name", "a", {})]


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize(
    "argument", [{"name": "name", "value": 5}, {"name": "name", "value": None}, {"name": 3, "value": "a"}]
)
async def test_defect_12c_non_string_completion_argument_never_reaches_the_function(
    modern: bool, argument: dict[str, Any]
) -> None:
    """A non-string ``argument.value`` reached the user's function unchecked (then -32603)."""
    server, seen = build_server()
    async with raw_session(server) as raw:
        await initialized(raw, modern)
        answer = await raw.ask(1, complete_frame(1, modern, argument=argument))
        fine = await raw.ask(
            2, complete_frame(2, modern, argument={"name": "name", "value": "b"}, context={"arguments": {"x": "y"}})
        )
    assert answer["error"]["code"] == INVALID_PARAMS, answer
    assert "argument" in answer["error"]["message"]
    assert seen == [("name", "b", {"x": "y"})]
    assert fine["result"]["completion"]["values"] == ["B"]
