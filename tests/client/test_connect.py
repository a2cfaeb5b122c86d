"""Connecting: HTTP errors that name no request, expired sessions, era fallback, unreachable servers.

Each test is named after the defect of the hardening issue (#12) it keeps out: 13 (HTTP errors
with ``"id": null``, 404 for an expired session), 14 (immediate fallback, forced modern that
cannot work), 15 (unreachable servers and commands that are files).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from elicitkit import Client
from elicitkit.client.connect import ModernNotSupported, ServerUnreachable, SessionExpired
from elicitkit.protocol.errors import ConnectionClosed, MCPError
from elicitkit.protocol.versions import Era
from kit.processes import free_port

from ._scripted import discover_result, ok, scripted_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

PEER = Path(__file__).parent / "peers" / "scripted_stdio.py"
LEGACY_INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "old", "version": "1"},
}
# What the official Python SDK answers when it cannot (or will no longer) serve a request.
MISSING_SESSION = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32600, "message": "Bad Request: Missing session ID"},
}
SESSION_NOT_FOUND = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}}


def _done(body: dict[str, Any], text: str = "done") -> tuple[int, Any]:
    return ok(body, {"content": [{"type": "text", "text": text}]})


def _official_legacy(
    body: dict[str, Any], headers: dict[str, str]
) -> tuple[int, Any] | tuple[int, Any, dict[str, str]]:
    """A 2025-only server in the official SDK's manner: no session, no service, and an error with a null id."""
    if body["method"] == "initialize":
        return (*ok(body, LEGACY_INIT), {"mcp-session-id": "legacy-1"})
    if "mcp-session-id" not in headers:
        return 400, MISSING_SESSION
    return _done(body)


# ----------------------------------------------------------------------------- 13


async def test_defect_13_http_error_with_null_id_fails_the_request_at_once() -> None:
    """#13: a JSON-RPC error with ``"id": null`` in an HTTP error answers the request that was posted."""

    def broken(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "tools/call":
            return 500, {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "boom"}}
        return ok(body, LEGACY_INIT)

    async with scripted_server(broken) as server, Client(server.url, timeout=10) as client:
        started = time.monotonic()
        with pytest.raises(MCPError) as caught:
            await client.call_tool("t", {})
        assert time.monotonic() - started < 3
    assert (caught.value.code, caught.value.message) == (-32603, "boom")


def _sessions(refuse_second: bool = False, *, refusals: int | None = None) -> tuple[Any, list[str]]:
    """A server whose session s1 serves one request and is then forgotten; a new initialize gets s2.

    ``refuse_second``: every initialize after the first is refused; ``refusals``: only that many.
    """
    given: list[str] = []
    served: dict[str | None, int] = {}
    refused = [0]

    def answer(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any] | tuple[int, Any, dict[str, str]]:
        if body["method"] == "initialize":
            if given and (refuse_second or (refusals is not None and refused[0] < refusals)):
                refused[0] += 1
                return 503, {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32603, "message": "full"}}
            given.append(f"s{len(given) + 1}")
            return (*ok(body, LEGACY_INIT), {"mcp-session-id": given[-1]})
        session = headers.get("mcp-session-id")
        served[session] = served.get(session, 0) + 1
        if session not in given or (session == "s1" and served[session] > 1):
            return 404, SESSION_NOT_FOUND
        return _done(body, f"{body['method']} in {session}")

    return answer, given


async def test_defect_13_http_404_for_an_expired_session_starts_a_new_session() -> None:
    """#13: 404 for a request that carried a session id: initialize again (no id), then send it once more."""
    answer, given = _sessions()
    async with scripted_server(answer, session_header=False) as server, Client(server.url, timeout=10) as client:
        started = time.monotonic()
        await client.request("tools/list")  # s1 is still there
        result = await client.call_tool("t", {})
        assert time.monotonic() - started < 3
        assert result.text == "tools/call in s2"
    assert given == ["s1", "s2"]
    initializes = server.posts("initialize")
    assert len(initializes) == 2
    assert "mcp-session-id" not in initializes[1].headers  # a new session is asked for without the old id
    calls = server.posts("tools/call")
    assert [c.headers.get("mcp-session-id") for c in calls] == ["s1", "s2"]


async def test_defect_13_http_404_when_a_new_session_is_refused_is_a_clear_error() -> None:
    """#13: the server forgot us and will not start again: say so, at once."""
    answer, _ = _sessions(refuse_second=True)
    async with scripted_server(answer, session_header=False) as server, Client(server.url, timeout=10) as client:
        await client.request("tools/list")
        started = time.monotonic()
        with pytest.raises(SessionExpired) as caught:
            await client.call_tool("t", {})
        assert time.monotonic() - started < 3
    assert isinstance(caught.value, ConnectionClosed)
    assert "ended our session and refused a new one" in caught.value.message


async def test_a_session_that_could_not_be_renewed_is_renewed_by_the_next_request() -> None:
    """Seen in the fleet's Redis-restart test: the new session was refused while Redis was down, and
    every later request went out with no session at all ("missing Mcp-Session-Id") for good."""
    answer, given = _sessions(refusals=1)
    async with scripted_server(answer, session_header=False) as server, Client(server.url, timeout=10) as client:
        await client.request("tools/list")
        with pytest.raises(SessionExpired):
            await client.call_tool("t", {})  # s1 forgotten, and the first new session refused
        result = await client.call_tool("t", {})
        assert result.text == "tools/call in s2"
    assert given == ["s1", "s2"]
    assert [c.headers.get("mcp-session-id") for c in server.posts("tools/call")] == ["s1", "s2"]


# ----------------------------------------------------------------------------- 14


async def test_defect_14_auto_against_a_2025_only_http_server_falls_back_at_once() -> None:
    """#14: a 4xx without a 2026 error means initialize now, not after ``discover_timeout``."""
    async with scripted_server(_official_legacy, session_header=False) as server:
        started = time.monotonic()
        async with Client(server.url, mode="auto", discover_timeout=10) as client:
            assert client.era is Era.LEGACY
            assert time.monotonic() - started < 3
            assert (await client.call_tool("t", {})).text == "done"


async def test_defect_14_forced_modern_against_a_2025_only_http_server_fails_at_once() -> None:
    """#14: ``mode="modern"`` against a server that refuses ``server/discover``: a clear error, now."""
    async with scripted_server(_official_legacy, session_header=False) as server:
        started = time.monotonic()
        with pytest.raises(ModernNotSupported) as caught:
            async with Client(server.url, mode="modern", timeout=20):
                pass
        assert time.monotonic() - started < 3
    assert "does not speak 2026-07-28" in caught.value.message
    assert "mode='legacy'" in caught.value.message


async def test_defect_14_forced_modern_over_stdio_fails_when_discover_is_not_found() -> None:
    """#14: -32601 for ``server/discover`` means no 2026 here: fail the connection, do not carry on."""
    with pytest.raises(ModernNotSupported) as caught:
        async with Client([sys.executable, str(PEER), "no-discover"], mode="modern", timeout=10):
            pass
    assert caught.value.code == -32601
    assert "does not speak 2026-07-28" in caught.value.message


async def test_forced_modern_still_works_with_a_modern_server() -> None:
    def modern(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "server/discover":
            return ok(body, discover_result())
        return ok(body, {"resultType": "complete", "content": [{"type": "text", "text": "modern"}]})

    async with scripted_server(modern) as server, Client(server.url, mode="modern") as client:
        assert client.era is Era.MODERN
        assert (await client.call_tool("t", {})).text == "modern"


# ----------------------------------------------------------------------------- 15


@pytest.mark.parametrize("mode", ["legacy", "auto", "modern"])
async def test_defect_15_unreachable_url_is_an_elicitkit_error_that_says_what_to_check(mode: Any) -> None:
    """#15: no aiohttp exception (or its ``ssl:default``) reaches the caller."""
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(ServerUnreachable) as caught:
        async with Client(url, mode=mode, timeout=10):
            pass
    message = caught.value.message
    assert isinstance(caught.value, ConnectionClosed)
    assert f"is the server running at {url}?" in message
    assert "ssl:default" not in message and "aiohttp" not in message


async def test_defect_15_relative_python_file_as_command_says_how_to_run_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#15: ``Client(["bistro.py"])`` for a file that exists is not "file not found"."""
    (tmp_path / "bistro.py").write_text("print('hello')\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ServerUnreachable) as caught:
        async with Client(["bistro.py"], timeout=10):
            pass
    assert "run it as ['python', 'bistro.py']" in caught.value.message


async def test_defect_15_missing_command_is_an_elicitkit_error() -> None:
    with pytest.raises(ServerUnreachable) as caught:
        async with Client(["/nonexistent/elicitkit-no-such-server"], timeout=10):
            pass
    assert caught.value.message.startswith("could not start /nonexistent/elicitkit-no-such-server:")
    assert isinstance(caught.value.__cause__, FileNotFoundError)


async def test_defect_13_official_server_that_forgot_our_session_gets_a_new_one() -> None:
    """#13 against the real peer: the official SDK answers a deleted session with 404 and a null id."""
    pytest.importorskip("mcp")
    from interop.support import OFFICIAL_SERVER, http_server_process

    with http_server_process(OFFICIAL_SERVER) as url:
        async with Client(url, timeout=20) as client:
            assert (await client.call_tool("greet", {"name": "Ada"})).text == "Hello, Ada!"
            first = getattr(client.transport, "session_id", None)
            assert first is not None
            # the session ends behind the client's back
            async with aiohttp.ClientSession() as http, http.delete(url, headers={"Mcp-Session-Id": first}) as resp:
                assert resp.status < 300
            started = time.monotonic()
            assert (await client.call_tool("greet", {"name": "Bo"})).text == "Hello, Bo!"
            assert time.monotonic() - started < 5
            assert getattr(client.transport, "session_id", None) not in (None, first)


async def test_defect_14_forced_modern_against_a_silent_stdio_server_fails_after_discover_timeout() -> None:
    """#14: a server that never answers ``server/discover`` costs ``discover_timeout``, not the request timeout."""
    started = time.monotonic()
    with pytest.raises(ModernNotSupported) as caught:
        async with Client([sys.executable, str(PEER), "legacy-silent"], mode="modern", timeout=60, discover_timeout=1):
            pass
    assert time.monotonic() - started < 10
    assert "did not answer server/discover" in caught.value.message
