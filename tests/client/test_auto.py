"""``mode="auto"``: a ``server/discover`` probe decides the era; anything not 2026 means the handshake."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from elicitkit import Client, Server
from elicitkit.protocol.versions import Era

from ._scripted import MODERN, SERVER_INFO, discover_result, error, ok, scripted_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

PEER = Path(__file__).parent / "peers" / "scripted_stdio.py"
LEGACY_INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "old", "version": "1"},
}


def _tool_result(body: dict[str, Any], modern: bool) -> tuple[int, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": "done"}]}
    if modern:
        result["resultType"] = "complete"
    return ok(body, result)


@pytest.mark.parametrize(
    "refusal",
    [
        pytest.param(lambda body: (400, None), id="400-no-body"),
        pytest.param(lambda body: error(body, -32600, "missing session id"), id="400-invalid-request"),
        pytest.param(lambda body: error(body, -32601, "Method not found", status=200), id="200-method-not-found"),
        pytest.param(lambda body: (404, None), id="404"),
        pytest.param(
            lambda body: error(body, -32022, "no", {"supported": ["2025-11-25"], "requested": MODERN}),
            id="400-only-legacy-versions",
        ),
    ],
)
async def test_http_legacy_server_falls_back_to_initialize(refusal: Any) -> None:
    def legacy(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "server/discover":
            return refusal(body)  # type: ignore[no-any-return]
        if body["method"] == "initialize":
            return ok(body, LEGACY_INIT)
        return _tool_result(body, modern=False)

    async with scripted_server(legacy) as server, Client(server.url, mode="auto") as client:
        assert client.era is Era.LEGACY
        assert client.protocol_version == "2025-11-25"
        assert client.server_info == {"name": "old", "version": "1"}
        assert (await client.call_tool("t", {})).text == "done"
    methods = [b["method"] for b in server.bodies()]
    assert methods == ["server/discover", "initialize", "notifications/initialized", "tools/call"]
    call = server.posts("tools/call")[0]
    assert call.headers["mcp-protocol-version"] == "2025-11-25"
    assert call.headers["mcp-session-id"] == "should-be-ignored"  # legacy: the session the server gave
    assert "_meta" not in call.body["params"]


@pytest.mark.parametrize(
    "first",
    [
        pytest.param(lambda body: ok(body, discover_result()), id="discover-result"),
        pytest.param(
            lambda body: error(body, -32022, "no", {"supported": [MODERN], "requested": "x"}), id="unsupported-version"
        ),
    ],
)
async def test_http_modern_server_is_detected(first: Any) -> None:
    answered: list[int] = []

    def modern(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "server/discover":
            answered.append(1)
            if len(answered) == 1:
                return first(body)  # type: ignore[no-any-return]
            return ok(body, discover_result())
        if body["method"] == "initialize":
            return error(body, -32601, "Method not found", status=404)
        return _tool_result(body, modern=True)

    async with scripted_server(modern) as server, Client(server.url, mode="auto") as client:
        assert client.era is Era.MODERN
        assert client.protocol_version == MODERN
        assert client.server_info == SERVER_INFO
        assert (await client.call_tool("t", {})).text == "done"
    assert "initialize" not in [b["method"] for b in server.bodies()]
    assert server.posts("tools/call")[0].headers["mcp-method"] == "tools/call"


@pytest.mark.parametrize("mode", ["legacy", "legacy-silent"])
async def test_stdio_legacy_server_falls_back_to_initialize(mode: str) -> None:
    client = Client([sys.executable, str(PEER), mode], mode="auto", discover_timeout=1.0)
    async with client:
        assert client.era is Era.LEGACY
        assert client.server_info["name"] == "legacy-stdio"
        seen = (await client.call_tool("t", {})).text
    assert seen.split(",") == ["server/discover", "initialize", "tools/call"]


async def test_stdio_modern_server_is_detected() -> None:
    async with Client([sys.executable, str(PEER), "modern"], mode="auto") as client:
        assert client.era is Era.MODERN
        assert client.server_info == {"name": "modern-stdio", "version": "1"}
        seen = (await client.call_tool("t", {})).text
    assert seen.split(",") == ["server/discover", "tools/call"]


def _our_server() -> Server:
    server = Server("ours")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return server


@pytest.mark.parametrize("mode", ["auto", "legacy", "modern"])
async def test_our_server_in_memory_in_every_mode(mode: Any) -> None:
    async with Client(_our_server(), mode=mode) as client:
        assert client.server_info["name"] == "ours"
        assert client.protocol_version is not None
        assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"


OUR_LOWLEVEL = Path(__file__).parents[1] / "interop" / "peers" / "our_lowlevel_server.py"


async def test_our_lowlevel_server_over_stdio_in_auto_mode() -> None:
    async with Client([sys.executable, str(OUR_LOWLEVEL), "stdio"], mode="auto") as client:
        assert client.era is not None
        assert client.server_info["name"]
        assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"


async def test_our_lowlevel_server_over_http_in_auto_mode() -> None:
    from interop.support import http_server_process

    with http_server_process(OUR_LOWLEVEL) as url:
        async with Client(url, mode="auto") as client:
            assert client.era is not None
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
        async with Client(url, mode="legacy") as client:
            assert client.era is Era.LEGACY
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
