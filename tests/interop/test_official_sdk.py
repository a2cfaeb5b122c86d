"""Interop with the official ``mcp`` SDK (2.3.0), in both directions, over stdio and Streamable HTTP.

* Our :class:`elicitkit.Client` against a server written with the SDK's ``MCPServer``
  (``peers/official_server.py``).
* The SDK's ``mcp.Client`` against a server written with our ``LowLevelServer``
  (``peers/our_lowlevel_server.py``).

Every test runs once per transport. The stdio variants let the client under test spawn the
server; the HTTP variants share one server subprocess per module (see ``conftest.py``).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import mcp
import pytest
from mcp import StdioServerParameters
from mcp import types as mcp_types
from mcp.client.streamable_http import streamable_http_client

from elicitkit import Client
from elicitkit.elicitation.requests import FormRequest, UrlRequest

from .support import OFFICIAL_SERVER, OUR_SERVER

pytestmark = [
    pytest.mark.interop,
    pytest.mark.anyio,
    pytest.mark.timeout(30),
    # The SDK flags ping and logging as deprecated for the 2026 era; we speak 2025-11-25 here.
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
]

TRANSPORTS = ["stdio", "http"]
PROTOCOL = "2025-11-25"
STEP = 10.0  # seconds any single interaction may take before the test fails instead of hanging


# =============================================================================================
# 1. our Client  ->  official MCPServer
# =============================================================================================


@pytest.fixture(params=TRANSPORTS)
def official_target(request: pytest.FixtureRequest) -> list[str] | str:
    """What our Client connects to: a command line (stdio) or the URL of a running server (HTTP)."""
    if request.param == "stdio":
        return [sys.executable, str(OFFICIAL_SERVER), "stdio"]
    return str(request.getfixturevalue("official_http_url"))


async def test_our_client_handshake_and_ping(official_target: Any) -> None:
    with anyio.fail_after(STEP):
        async with Client(official_target) as client:
            assert client.protocol_version == PROTOCOL
            assert client.server_info == {"name": "official-peer", "version": "9.9.9"}
            assert client.instructions == "written with the official SDK"
            assert client.server_declares("tools")
            assert await client.request("ping") == {}
            await client.ping()


async def test_our_client_lists_official_tools(official_target: Any) -> None:
    with anyio.fail_after(STEP):
        async with Client(official_target) as client:
            listing = await client.list_tools()
    tools = {tool.name: tool for tool in listing.tools}
    assert set(tools) == {"greet", "add", "count", "chatty", "ask_contact", "ping_client"}
    assert listing.next_cursor is None

    greet = tools["greet"]
    assert greet.description == "Greet someone by name."
    assert greet.input_schema["type"] == "object"
    assert greet.input_schema["properties"]["name"]["type"] == "string"
    assert greet.input_schema["required"] == ["name"]

    add = tools["add"]
    assert add.input_schema["properties"]["a"]["type"] == "integer"
    assert add.input_schema["properties"]["b"]["type"] == "integer"
    assert sorted(add.input_schema["required"]) == ["a", "b"]
    assert add.output_schema is not None
    assert add.output_schema["properties"]["total"]["type"] == "integer"
    assert sorted(add.output_schema["required"]) == ["expression", "total"]


async def test_our_client_calls_official_tools(official_target: Any) -> None:
    with anyio.fail_after(STEP):
        async with Client(official_target) as client:
            greeting = await client.call_tool("greet", {"name": "Ada"})
            total = await client.call_tool("add", {"a": 2, "b": 3})
            bad = await client.call_tool("add", {"a": "two", "b": 3})

    assert not greeting.is_error
    assert greeting.text == "Hello, Ada!"

    assert not total.is_error
    assert total.structured_content == {"total": 5, "expression": "2 + 3"}
    assert json.loads(total.text) == {"total": 5, "expression": "2 + 3"}

    assert bad.is_error  # argument validation failed on their side, reported as a tool error
    assert bad.structured_content is None


async def test_our_client_receives_official_progress(official_target: Any) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(STEP):
        async with Client(official_target) as client:
            result = await client.call_tool("count", {"n": 3}, progress_callback=on_progress)

    assert result.text == "counted to 3"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_our_client_receives_official_logs(official_target: Any) -> None:
    logs: list[dict[str, Any]] = []

    with anyio.fail_after(STEP):
        async with Client(official_target, logging_callback=logs.append) as client:
            result = await client.call_tool("chatty", {"message": "hi"})

    assert result.text == "hi"
    assert logs == [
        {"level": "info", "logger": "chatty", "data": "about to echo hi"},
        {"level": "warning", "logger": "chatty", "data": {"echoed": "hi"}},
    ]


async def test_our_client_answers_official_elicitation(official_target: Any) -> None:
    asked: list[dict[str, Any]] = []
    answers = iter(
        [
            {"action": "accept", "content": {"name": "Ada", "age": 36}},
            {"action": "decline"},
        ]
    )

    async def on_elicit(request: FormRequest | UrlRequest) -> dict[str, Any]:
        asked.append(request)
        return next(answers)

    with anyio.fail_after(STEP):
        async with Client(official_target, elicitation_callback=on_elicit) as client:
            accepted = await client.call_tool("ask_contact")
            declined = await client.call_tool("ask_contact")

    assert accepted.text == "Hello Ada, age 36"
    assert declined.text == "no contact: decline"
    assert len(asked) == 2
    request = asked[0]
    assert isinstance(request, FormRequest)
    assert request.message == "Who should I greet?"
    assert request.mode == "form"
    assert request.origin is not None and request.origin.location == client.transport.describe()
    schema = request.requested_schema
    assert schema["properties"]["name"]["type"] == "string"
    assert schema["properties"]["age"]["type"] == "integer"
    assert sorted(schema["required"]) == ["age", "name"]


async def call_ping_client(client: Client, attempts: int, per_attempt: float) -> Any:
    """Call the official server's ``ping_client`` tool, bounded in time (a lost ping would hang)."""
    for _ in range(attempts):
        with anyio.move_on_after(per_attempt):
            return await client.call_tool("ping_client")
    raise TimeoutError(f"the server's ping never reached the client ({attempts} x {per_attempt}s)")


@pytest.mark.parametrize("official_target", ["stdio", "http"], indirect=True)
async def test_official_server_pings_our_client(official_target: Any) -> None:
    """Their server pings from inside a tool on no particular stream (HTTP: the standalone GET stream).

    One attempt only: the Client opens the standalone stream during the handshake and waits for the
    server to accept it, so a call made straight away cannot outrun it.
    """
    async with Client(official_target) as client:
        result = await call_ping_client(client, attempts=1, per_attempt=5.0)
    assert not result.is_error
    assert result.text == "client answered ping"


# =============================================================================================
# 2. official mcp.Client  ->  our LowLevelServer
# =============================================================================================


class Wire:
    """What the SDK's HTTP client saw: one ``(JSON-RPC method, response content type)`` per POST."""

    def __init__(self) -> None:
        self.posts: list[tuple[str | None, str]] = []

    async def on_response(self, response: httpx2.Response) -> None:
        if response.request.method != "POST":
            return
        try:
            body = json.loads(response.request.content)
        except (httpx2.RequestNotRead, ValueError):
            body = {}
        method = body.get("method") if isinstance(body, dict) else None
        self.posts.append((method, response.headers.get("content-type", "")))

    def content_types(self, method: str) -> list[str]:
        return [ctype.split(";")[0].strip() for m, ctype in self.posts if m == method]


@pytest.fixture(params=TRANSPORTS)
def our_target(request: pytest.FixtureRequest) -> StdioServerParameters | str:
    """What the SDK's client connects to: stdio parameters, or the URL of our running server."""
    if request.param == "stdio":
        return StdioServerParameters(command=sys.executable, args=[str(OUR_SERVER), "stdio"])
    return str(request.getfixturevalue("our_http_url"))


@contextlib.asynccontextmanager
async def official_client(
    target: StdioServerParameters | str, *, mode: str = "legacy", wire: Wire | None = None, **kwargs: Any
) -> AsyncIterator[mcp.Client]:
    """The SDK's ``mcp.Client``, forced onto the 2025-11-25 ``initialize`` handshake by default.

    With ``wire`` and an HTTP target, it runs over an httpx2 client that records every POST.
    """
    async with contextlib.AsyncExitStack() as stack:
        server: Any = target
        if wire is not None and isinstance(target, str):
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    timeout=httpx2.Timeout(30.0, read=300.0), event_hooks={"response": [wire.on_response]}
                )
            )
            server = streamable_http_client(target, http_client=http)
        yield await stack.enter_async_context(mcp.Client(server, mode=mode, **kwargs))


async def test_official_client_handshake_and_ping(our_target: Any) -> None:
    with anyio.fail_after(STEP):
        async with official_client(our_target) as client:
            assert client.protocol_version == PROTOCOL
            assert client.server_info is not None
            assert (client.server_info.name, client.server_info.version) == ("elicitkit-peer", "1.2.3")
            assert client.instructions == "written with elicitkit"
            caps = client.server_capabilities
            assert caps.tools is not None
            assert caps.logging is not None
            pong = await client.send_ping()
            assert isinstance(pong, mcp_types.EmptyResult)


async def test_official_client_auto_mode_discovers_2026(our_target: Any) -> None:
    """The SDK's default mode probes ``server/discover``; our server answers it and speaks 2026-07-28."""
    with anyio.fail_after(STEP):
        async with official_client(our_target, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("echo", {"text": "auto"})
    assert result.structured_content == {"echo": "auto", "length": 4}


async def test_official_client_lists_our_tools(our_target: Any) -> None:
    with anyio.fail_after(STEP):
        async with official_client(our_target) as client:
            listing = await client.list_tools()
    tools = {tool.name: tool for tool in listing.tools}
    assert set(tools) == {"echo", "countdown", "chatty", "ping_client", "ask"}
    echo = tools["echo"]
    assert echo.description == "Echo the text back."
    assert echo.input_schema == {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    assert echo.output_schema is not None
    assert echo.output_schema["required"] == ["echo", "length"]
    assert tools["countdown"].input_schema["properties"]["n"] == {"type": "integer"}


async def test_official_client_calls_our_tool(our_target: Any) -> None:
    with anyio.fail_after(STEP):
        async with official_client(our_target) as client:
            # Listing first lets the SDK validate structuredContent against our outputSchema.
            await client.list_tools()
            result = await client.call_tool("echo", {"text": "héllo wörld"})
            with pytest.raises(mcp.MCPError) as unknown:
                await client.call_tool("no_such_tool", {})
    assert unknown.value.code == -32602
    assert "no_such_tool" in unknown.value.error.message
    assert not result.is_error
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    assert block.text == "héllo wörld"
    assert result.structured_content == {"echo": "héllo wörld", "length": 11}


async def test_official_client_receives_our_progress(our_target: Any) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(STEP):
        async with official_client(our_target) as client:
            result = await client.call_tool("countdown", {"n": 4}, progress_callback=on_progress)
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    assert block.text == "liftoff after 4"
    assert seen == [(i, 4, f"tick {i}") for i in range(1, 5)]


async def test_official_client_receives_our_logs(our_target: Any) -> None:
    logs: list[mcp_types.LoggingMessageNotificationParams] = []

    async def on_log(params: mcp_types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    with anyio.fail_after(STEP):
        async with official_client(our_target, logging_callback=on_log) as client:
            await client.call_tool("chatty", {"message": "silent"})  # no level set: we send nothing
            await client.set_logging_level("warning")
            await client.call_tool("chatty", {"message": "loud"})
            await client.set_logging_level("debug")
            await client.call_tool("chatty", {"message": "louder"})

    got = [(p.level, p.logger, p.data) for p in logs]
    assert got == [
        ("warning", "chatty", {"echoed": "loud"}),
        ("info", "chatty", "about to echo louder"),
        ("warning", "chatty", {"echoed": "louder"}),
    ]


async def test_our_server_pings_official_client(our_target: Any) -> None:
    with anyio.fail_after(STEP):
        async with official_client(our_target) as client:
            result = await client.call_tool("ping_client", {})
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    assert block.text == "client answered ping with {}"


async def test_official_client_answers_our_elicitation(our_target: Any) -> None:
    asked: list[mcp_types.ElicitRequestParams] = []
    answers = iter(
        [
            mcp_types.ElicitResult(action="accept", content={"answer": "42", "confident": True}),
            mcp_types.ElicitResult(action="decline"),
        ]
    )

    async def on_elicit(
        context: Any, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        asked.append(params)
        return next(answers)

    wire = Wire()
    with anyio.fail_after(STEP):
        async with official_client(our_target, wire=wire, elicitation_callback=on_elicit) as client:
            accepted = await client.call_tool("ask", {"question": "What is the answer?"})
            declined = await client.call_tool("ask", {"question": "Again?"})

    assert accepted.structured_content == {"action": "accept", "content": {"answer": "42", "confident": True}}
    block = accepted.content[0]
    assert isinstance(block, mcp_types.TextContent)
    assert json.loads(block.text) == accepted.structured_content
    assert declined.structured_content == {"action": "decline"}

    assert [p.message for p in asked] == ["What is the answer?", "Again?"]
    first = asked[0]
    assert isinstance(first, mcp_types.ElicitRequestFormParams)
    assert first.requested_schema["properties"]["answer"] == {"type": "string", "description": "Your answer"}
    assert first.requested_schema["required"] == ["answer"]

    if isinstance(our_target, str):
        # The eliciting tools/call was answered as an SSE stream; a plain request as JSON.
        assert wire.content_types("tools/call") == ["text/event-stream", "text/event-stream"]
        assert wire.content_types("initialize") == ["application/json"]
