"""The official ``mcp`` 2.3.0 client drives a tool whose question is asked by a resolver.

The SDK's ``mcp.Client`` (``mode="legacy"``, the 2025-11-25 handshake) spawns
``examples/elicitation/delete_folder.py`` over stdio (and reaches it over Streamable HTTP) and answers with its own
``elicitation_callback``. The resolved ``confirm`` parameter is not in the tool's input
schema, an empty folder is deleted without a question, and a non-empty one is asked about
once per call: accept-and-confirm, accept-but-keep, decline and cancel each reach the tool,
while the bare-model ``empty_trash`` ends with an error result on a decline.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp import StdioServerParameters
from mcp import types as mcp_types

from .support import http_server_process

pytestmark = [
    pytest.mark.interop,
    pytest.mark.anyio,
    pytest.mark.timeout(60),
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "elicitation" / "delete_folder.py"
STEP = 45.0  # one test's whole conversation; a hang guard only (cold interpreter starts are slow)


class OfficialUser:
    """An ``elicitation_callback`` for the SDK's client: scripted answers, every question kept."""

    def __init__(self, *answers: mcp_types.ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> mcp_types.ElicitResult:
        self.asked.append(params)
        assert self.answers, f"unexpected question: {params.message!r}"
        return self.answers.pop(0)


def text_of(result: mcp_types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The example as the SDK's client reaches it: a spawned process, or a fresh HTTP server."""
    if request.param == "stdio":
        yield StdioServerParameters(command=sys.executable, args=[str(EXAMPLE)])
    else:
        with http_server_process(EXAMPLE) as url:
            yield url


async def test_official_client_deletes_folders_through_a_resolver(target: Any) -> None:
    user = OfficialUser(
        mcp_types.ElicitResult(action="accept", content={"ok": False}),
        mcp_types.ElicitResult(action="decline"),
        mcp_types.ElicitResult(action="cancel"),
        mcp_types.ElicitResult(action="accept", content={"ok": True}),
        mcp_types.ElicitResult(action="decline"),
    )
    texts: list[str] = []
    with anyio.fail_after(STEP):
        async with mcp.Client(target, mode="legacy", cache=None, elicitation_callback=user) as session:
            assert session.protocol_version == "2025-11-25"
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert list(tools["delete_folder"].input_schema["properties"]) == ["path"]
            assert tools["delete_folder"].input_schema["required"] == ["path"]
            assert tools["empty_trash"].input_schema.get("properties") == {}

            empty = await session.call_tool("delete_folder", {"path": "/tmp/empty"})
            assert not empty.is_error
            assert text_of(empty) == "deleted /tmp/empty"
            assert user.asked == []  # nothing to confirm: no elicitation/create went out

            for _ in range(4):
                result = await session.call_tool("delete_folder", {"path": "/tmp/project"})
                assert not result.is_error, text_of(result)
                texts.append(text_of(result))
            trash = await session.call_tool("empty_trash", {})

    assert texts == [
        "kept the folder",
        "declined: folder not deleted",
        "cancelled: folder not deleted",
        "deleted /tmp/project",
    ]
    assert trash.is_error
    assert text_of(trash) == "empty_trash: the user declined: Empty the trash (1 file(s))?"
    assert [params.message for params in user.asked] == ["/tmp/project has 2 file(s). Delete anyway?"] * 4 + [
        "Empty the trash (1 file(s))?"
    ]
    first = user.asked[0]
    assert isinstance(first, mcp_types.ElicitRequestFormParams)
    assert first.requested_schema["properties"]["ok"]["type"] == "boolean"
    assert first.requested_schema["required"] == ["ok"]
