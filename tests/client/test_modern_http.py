"""The 2026-07-28 client on the wire: envelope, headers, Mcp-Param-*, tool dropping, -32022."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from elicitkit import Client, MCPError
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.protocol.modern import request_headers
from elicitkit.protocol.versions import Era

from ._scripted import MODERN, SERVER_INFO, b64, discover_result, error, ok, scripted_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"

ANNOTATED_TOOL = {
    "name": "annotated",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "note": {"type": "string", "x-mcp-header": "Note"},
            "score": {"type": "number"},
            "query": {"type": "string"},
        },
    },
}
INVALID_TOOLS = [
    {
        "name": "bad_number",
        "inputSchema": {"type": "object", "properties": {"s": {"type": "number", "x-mcp-header": "S"}}},
    },
    {
        "name": "bad_space",
        "inputSchema": {"type": "object", "properties": {"s": {"type": "string", "x-mcp-header": "A B"}}},
    },
    {
        "name": "bad_empty",
        "inputSchema": {"type": "object", "properties": {"s": {"type": "string", "x-mcp-header": ""}}},
    },
    {
        "name": "bad_duplicate",
        "inputSchema": {
            "type": "object",
            "properties": {
                "a": {"type": "string", "x-mcp-header": "Same"},
                "b": {"type": "string", "x-mcp-header": "same"},
            },
        },
    },
    {
        "name": "bad_nested",
        "inputSchema": {
            "type": "object",
            "properties": {"o": {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "X"}}}},
        },
    },
]


def everything(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    method = body["method"]
    if method == "server/discover":
        return ok(body, discover_result())
    if method == "tools/list":
        return ok(body, {"resultType": "complete", "tools": [{"name": "plain"}, ANNOTATED_TOOL, *INVALID_TOOLS]})
    if method == "tools/call":
        return ok(body, {"resultType": "complete", "content": [{"type": "text", "text": body["params"]["name"]}]})
    if method == "resources/read":
        return ok(body, {"resultType": "complete", "contents": []})
    if method == "prompts/get":
        return ok(body, {"resultType": "complete", "messages": []})
    if method == "prompts/list":
        return ok(body, {"resultType": "complete", "prompts": []})
    return error(body, -32601, f"Method not found: {method}", status=404)


async def _answer(request: Any) -> ElicitationResult[Any]:
    return ElicitationResult.decline()


async def _sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}


async def test_envelope_and_standard_headers_on_every_request() -> None:
    async with scripted_server(everything) as server:
        client = Client(
            server.url,
            mode="modern",
            client_info={"name": "tester", "version": "1.0"},
            elicitation_callback=_answer,
            sampling_callback=_sample,
            roots=[],
        )
        async with client:
            assert client.protocol_version == MODERN
            assert client.server_info == SERVER_INFO
            assert client.server_declares("tools")
            await client.list_tools()
            await client.call_tool("plain", {})
            await client.read_resource("file:///a%20b.txt")
            await client.get_prompt("greeting")
            await client.list_prompts()
    posts = server.posts()
    assert [p.body["method"] for p in posts] == [
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/read",
        "prompts/get",
        "prompts/list",
    ]
    for post in posts:
        meta = post.body["params"]["_meta"]
        assert meta[META_VERSION] == MODERN
        assert meta[META_CAPS] == {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
        assert meta[META_INFO] == {"name": "tester", "version": "1.0"}
        assert post.headers["mcp-protocol-version"] == MODERN
        assert post.headers["mcp-method"] == post.body["method"]
        assert "mcp-session-id" not in post.headers  # the server sent one; stateless clients ignore it
    names = {p.body["method"]: p.headers.get("mcp-name") for p in posts}
    assert names["tools/call"] == "plain"
    assert names["resources/read"] == "file:///a%20b.txt"
    assert names["prompts/get"] == "greeting"
    assert names["tools/list"] is None
    assert all(s.method == "POST" for s in server.seen)  # no GET stream, no DELETE


async def test_capabilities_follow_the_callbacks() -> None:
    async with scripted_server(everything) as server, Client(server.url, mode="modern") as client:
        await client.list_tools()
    assert all(b["params"]["_meta"][META_CAPS] == {} for b in server.bodies())


async def test_mcp_param_headers_and_their_encoding() -> None:
    calls = [
        (
            {"region": "us-west1", "priority": 42, "verbose": True, "note": "plain text"},
            {"region": "us-west1", "priority": "42", "verbose": "true", "note": "plain text"},
        ),
        (
            {"region": "Hello, 世界", "priority": 0, "verbose": False, "note": " lead"},
            {"region": b64("Hello, 世界"), "priority": "0", "verbose": "false", "note": b64(" lead")},
        ),
        (
            {"region": "trail ", "priority": -7, "note": "=?base64?SGk=?="},
            {"region": b64("trail "), "priority": "-7", "note": b64("=?base64?SGk=?=")},
        ),
        (
            {"region": "tab\there", "verbose": None, "note": "", "score": 1.5, "query": "q"},
            {"region": b64("tab\there"), "note": ""},
        ),
    ]
    async with scripted_server(everything) as server, Client(server.url, mode="modern") as client:
        await client.list_tools()
        for arguments, _ in calls:
            await client.call_tool("annotated", arguments)
    sent = server.posts("tools/call")
    assert len(sent) == len(calls)
    for post, (arguments, expected) in zip(sent, calls, strict=True):
        params = {k[len("mcp-param-") :]: v for k, v in post.headers.items() if k.startswith("mcp-param-")}
        assert params == expected, arguments
        assert post.body["params"]["arguments"] == arguments  # the body is untouched


async def test_tools_with_invalid_header_annotations_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    async with scripted_server(everything) as server, Client(server.url, mode="modern") as client:
        with caplog.at_level(logging.WARNING, logger="elicitkit.client"):
            tools = await client.list_tools()
    assert [t.name for t in tools.tools] == ["plain", "annotated"]
    warned = " ".join(r.getMessage() for r in caplog.records)
    for tool in INVALID_TOOLS:
        assert repr(tool["name"]) in warned


async def test_legacy_mode_keeps_every_tool() -> None:
    """x-mcp-header is a 2026 rule: a handshake-era client lists tools as they come."""

    def legacy(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "initialize":
            return ok(body, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO})
        return everything(body, headers)

    async with scripted_server(legacy, session_header=False) as server, Client(server.url, mode="legacy") as client:
        tools = await client.list_tools()
    assert len(tools.tools) == 2 + len(INVALID_TOOLS)


async def test_unsupported_version_is_retried_once_with_a_supported_one() -> None:
    refused: list[Any] = []

    def first_refused(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if not refused:
            refused.append(body["id"])
            return error(body, -32022, "Unsupported protocol version", {"supported": [MODERN], "requested": MODERN})
        return everything(body, headers)

    async with scripted_server(first_refused) as server, Client(server.url, mode="modern") as client:
        await client.list_tools()
    discovers = server.bodies("server/discover")
    assert len(discovers) == 2
    assert discovers[0]["id"] != discovers[1]["id"]
    assert discovers[1]["params"]["_meta"][META_VERSION] == MODERN


async def test_unsupported_version_without_a_mutual_one_fails() -> None:
    def only_future(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        return error(body, -32022, "Unsupported", {"supported": ["2099-01-01"], "requested": MODERN})

    async with scripted_server(only_future) as server:
        with pytest.raises(MCPError) as caught:
            async with Client(server.url, mode="modern"):
                pass
    assert caught.value.code == -32022
    assert len(server.posts()) == 1  # nothing to retry with


async def test_unsupported_version_is_retried_only_once() -> None:
    def always_refuse(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        return error(body, -32022, "Unsupported", {"supported": [MODERN], "requested": MODERN})

    async with scripted_server(always_refuse) as server:
        with pytest.raises(MCPError):
            async with Client(server.url, mode="modern"):
                pass
    assert len(server.posts()) == 2


def test_per_message_headers_are_made_once_and_handed_out_as_copies() -> None:
    """The headers of a request without Mcp-Param-* are made once per (method, name, version):
    each request gets what request_headers() gives it, in a dict of its own."""
    connection = Client("http://127.0.0.1:9/mcp", mode="modern").connection
    connection.era = Era.MODERN

    def message(method: str, params: dict[str, Any], version: str = MODERN) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": {META_VERSION: version}}}

    cases = [
        ("tools/call", {"name": "plain", "arguments": {}}),
        ("tools/call", {"name": "plain", "arguments": {"x": 1}}),
        ("tools/call", {"name": "other", "arguments": {}}),
        ("tools/call", {"name": " spaced é ", "arguments": {}}),
        ("tools/call", {"name": 7, "arguments": {}}),  # not a name: no Mcp-Name
        ("resources/read", {"uri": "file:///a%20b.txt"}),
        ("prompts/get", {"name": "plain"}),
        ("tools/list", {}),
    ]
    for _ in range(2):  # the second pass is answered from what the first made
        for method, params in cases:
            for version in (MODERN, "2099-01-01"):
                wire = message(method, params, version)
                got = connection._headers_for(wire)
                assert got == request_headers(method, wire["params"], version, {})
                assert got is not connection._headers_for(wire)  # a copy each time
                got["Mcp-Method"] = "changed"  # a caller's change stays its own
                assert connection._headers_for(wire)["Mcp-Method"] == method
    # A tool with Mcp-Param-* headers gets them from each call's arguments, never from a memo.
    connection.tool_headers["region"] = {"region": "Region"}
    for region in ("us", "eu"):
        wire = message("tools/call", {"name": "region", "arguments": {"region": region}})
        assert connection._headers_for(wire)["Mcp-Param-Region"] == region
