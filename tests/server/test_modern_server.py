"""The server side of 2026-07-28, driven with raw JSON-RPC (in-process, over HTTP, over stdio).

* the per-request envelope and its error ladder (-32602, -32020, -32022, -32601, -32021), with
  the HTTP status of each;
* ``server/discover``, ``resultType`` on every result, cache hints on list results;
* one server process serving a 2025 handshake client and 2026 requests at the same time, on
  the same HTTP endpoint and on the same stdio process;
* multi-round-trip: ``ctx.elicit`` over several rounds, a resolver, a prompt and a template
  resource that ask; what happens to missing, extra, wrongly keyed, malformed and invalid
  answers;
* ``requestState`` that was tampered with, cut short, expired, replayed elsewhere or sealed
  with another key: always the same frozen -32602, the real cause only in the log, and a
  fresh call without state starts over cleanly.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

from elicitkit import Server
from elicitkit.server.rounds.keys import KeyRing
from elicitkit.server.rounds.sealing import PUBLIC_MESSAGE, AeadStateCodec
from kit.raw import (
    ACCEPT,
    META_CAPS,
    META_INFO,
    META_SERVER_INFO,
    META_VERSION,
    MODERN_SERVER,
    V2026,
    HttpWire,
    MemoryWire,
    Modern,
    Reply,
    accept,
    complete,
    headers_for,
    http_wire,
    input_required,
    memory_wire,
    meta,
)

from .modern_server import build_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

LEGACY = "2025-11-25"
REMOVED = ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "unknown/method"]


@pytest.fixture(scope="module")
def server() -> Server:
    """One server for the module: 2026 requests leave nothing behind in it."""
    return build_server()


@pytest.fixture(scope="module")
async def endpoint(server: Server) -> AsyncIterator[HttpWire]:
    async with http_wire(server) as wire:
        yield wire


@pytest.fixture(params=["memory", "http"])
async def client(request: pytest.FixtureRequest, server: Server, endpoint: HttpWire) -> AsyncIterator[Modern]:
    """A raw 2026 client of ``server``: through a session in this process, or over HTTP."""
    if request.param == "memory":
        async with memory_wire(server) as wire:
            yield Modern(wire)
    else:
        yield Modern(endpoint)


@pytest.fixture
def http(endpoint: HttpWire) -> Modern:
    return Modern(endpoint)


def error_of(reply: Reply, code: int, status: int) -> dict[str, Any]:
    reply.expect_status(status)
    error = reply.error
    assert error["code"] == code, error
    return error


# ============================================================================ the envelope ladder


async def test_discover_describes_the_server(client: Modern) -> None:
    result = complete(await client.request("server/discover"))
    assert V2026 in result["supportedVersions"]
    assert result["capabilities"] == {
        "tools": {"listChanged": True},  # delivered on subscriptions/listen streams
        "resources": {"listChanged": True, "subscribe": True},
        "prompts": {"listChanged": True},
        "completions": {},
    }
    assert "logging" not in result["capabilities"]  # no logging/setLevel in 2026
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
    assert result["cacheScope"] in ("public", "private")
    assert result["_meta"][META_SERVER_INFO] == {"name": "modern-test", "version": "1.2.3"}
    assert result["instructions"] == "Asks before it acts."


async def test_client_info_may_be_left_out(client: Modern) -> None:
    envelope = {META_VERSION: V2026, META_CAPS: {}}
    assert complete(await client.request("server/discover", envelope=envelope))["supportedVersions"]
    listed = complete(await client.request("tools/list", envelope=envelope))
    assert "echo" in {tool["name"] for tool in listed["tools"]}


@pytest.mark.parametrize(
    "envelope",
    [
        pytest.param({META_VERSION: V2026, META_INFO: {"name": "x", "version": "0"}}, id="no-capabilities"),
        pytest.param({META_VERSION: V2026, META_CAPS: ["sampling"]}, id="capabilities-not-an-object"),
        pytest.param({META_VERSION: V2026, META_CAPS: None}, id="capabilities-null"),
    ],
)
async def test_envelope_without_capabilities_is_invalid_params(client: Modern, envelope: dict[str, Any]) -> None:
    error = error_of(await client.request("server/discover", envelope=envelope), -32602, 400)
    assert "clientCapabilities" in error["message"]


@pytest.mark.parametrize(
    "params",
    [
        pytest.param(None, id="no-params"),
        pytest.param({}, id="no-meta"),
        pytest.param({"_meta": {}}, id="empty-meta"),
        pytest.param({"_meta": "2026-07-28"}, id="meta-not-an-object"),
        pytest.param({"_meta": {META_CAPS: {}}}, id="no-protocol-version"),
        pytest.param({"_meta": {META_VERSION: 20260728, META_CAPS: {}}}, id="version-not-a-string"),
    ],
)
async def test_http_request_without_a_usable_envelope_is_400_invalid_params(
    http: Modern, params: dict[str, Any] | None
) -> None:
    """The 2026 header routes the POST to the 2026 path; the body's envelope is then checked first."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": "no-envelope", "method": "server/discover"}
    if params is not None:
        message["params"] = params
    reply = await http.raw(message, headers_for("server/discover", None))
    assert reply.body["id"] == "no-envelope"
    error_of(reply, -32602, 400)


def _with(headers: dict[str, str], **changes: str | None) -> dict[str, str]:
    out = dict(headers)
    for name, value in changes.items():
        name = name.replace("_", "-")
        out = {k: v for k, v in out.items() if k.lower() != name.lower()}
        if value is not None:
            out[name] = value
    return out


CALL_ECHO = {"name": "echo", "arguments": {}}
GOOD_CALL_HEADERS = headers_for("tools/call", CALL_ECHO)


@pytest.mark.parametrize(
    ("method", "params", "headers"),
    [
        pytest.param("tools/list", {}, {"Mcp-Method": "tools/list"}, id="no-version-header"),
        pytest.param("tools/list", {}, {"MCP-Protocol-Version": LEGACY, "Mcp-Method": "tools/list"}, id="version-2025"),
        pytest.param("tools/list", {}, {"MCP-Protocol-Version": V2026}, id="no-method-header"),
        pytest.param(
            "tools/list", {}, {"MCP-Protocol-Version": V2026, "Mcp-Method": "prompts/list"}, id="other-method"
        ),
        pytest.param(
            "tools/list", {}, {"MCP-Protocol-Version": V2026, "Mcp-Method": "TOOLS/LIST"}, id="method-case-differs"
        ),
        pytest.param("tools/call", CALL_ECHO, _with(GOOD_CALL_HEADERS, Mcp_Name=None), id="no-name-header"),
        pytest.param("tools/call", CALL_ECHO, _with(GOOD_CALL_HEADERS, Mcp_Name="wrong_tool"), id="other-name"),
        pytest.param(
            "tools/call", CALL_ECHO, _with(GOOD_CALL_HEADERS, Mcp_Name="=?base64?ZWNobw?="), id="bad-base64-name"
        ),
        pytest.param(
            "prompts/get",
            {"name": "write_about", "arguments": {"topic": "x"}},
            {"MCP-Protocol-Version": V2026, "Mcp-Method": "prompts/get"},
            id="prompt-without-name",
        ),
        pytest.param(
            "resources/read",
            {"uri": "notes://readme"},
            {"MCP-Protocol-Version": V2026, "Mcp-Method": "resources/read", "Mcp-Name": "notes://other"},
            id="other-uri",
        ),
    ],
)
async def test_header_mismatch_is_400_header_mismatch(
    http: Modern, method: str, params: dict[str, Any], headers: dict[str, str]
) -> None:
    reply = await http.request(method, params, headers=headers, request_id=f"hdr-{method}")
    error_of(reply, -32020, 400)


async def test_header_and_meta_versions_must_agree(http: Modern) -> None:
    """Header 2026-07-28, body v999.0.0: the header rung comes before the version rung."""
    reply = await http.request(
        "server/discover", envelope=meta(version="v999.0.0"), headers=headers_for("server/discover", None)
    )
    error_of(reply, -32020, 400)


async def _post_bytes(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """A hand-written HTTP/1.1 POST: httpx refuses header values with surrounding spaces."""
    parsed = httpx.URL(url)
    head = [f"POST {parsed.raw_path.decode()} HTTP/1.1", f"Host: {parsed.host}:{parsed.port}", "Connection: close"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    head += ["Accept: application/json, text/event-stream", "Content-Type: application/json"]
    head.append(f"Content-Length: {len(body)}")
    async with await anyio.connect_tcp(parsed.host, parsed.port) as stream:
        await stream.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        raw = b""
        with anyio.fail_after(5):
            try:
                while True:
                    raw += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
    status_line, _, rest = raw.partition(b"\r\n")
    _, _, payload = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), orjson.loads(payload)


async def test_header_values_are_trimmed(http: Modern) -> None:
    wire = http.wire
    assert isinstance(wire, HttpWire)
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {**CALL_ECHO, "_meta": meta()}}
    headers = {"MCP-Protocol-Version": f" {V2026} ", "Mcp-Method": "tools/call", "Mcp-Name": "  echo  "}
    status, answer = await _post_bytes(wire.url, orjson.dumps(body), headers)
    assert status == 200, answer
    assert answer["result"]["content"] == [{"type": "text", "text": "echo: hi"}]


async def test_header_names_are_case_insensitive_and_values_base64_decoded(http: Modern) -> None:
    headers = {"mcp-protocol-version": V2026, "MCP-METHOD": "tools/call", "mcp-name": "=?base64?ZWNobw==?="}
    reply = await http.request("tools/call", CALL_ECHO, headers=headers)
    assert complete(reply)["content"] == [{"type": "text", "text": "echo: hi"}]


@pytest.mark.parametrize("version", ["v999.0.0", "2025-11-25", "2026-07-29"])
async def test_unsupported_version_is_400_with_supported_and_requested(client: Modern, version: str) -> None:
    discovered = complete(await client.request("server/discover"))["supportedVersions"]
    reply = await client.request(
        "tools/list", envelope=meta(version=version), headers=headers_for("tools/list", None, version)
    )
    error = error_of(reply, -32022, 400)
    assert error["data"]["requested"] == version
    assert error["data"]["supported"] == [V2026]
    assert set(error["data"]["supported"]) <= set(discovered)


@pytest.mark.parametrize("method", REMOVED)
async def test_removed_and_unknown_methods_are_404_method_not_found(client: Modern, method: str) -> None:
    params: dict[str, Any] = {}
    if method == "initialize":
        params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}
    elif method == "logging/setLevel":
        params = {"level": "debug"}
    elif method.startswith("resources/"):
        params = {"uri": "notes://readme"}
    error_of(await client.request(method, params), -32601, 404)


async def test_the_ladder_runs_in_order(http: Modern) -> None:
    """Each rung wins over the ones below it (an unknown method with every other fault too)."""
    headers = {"MCP-Protocol-Version": "v999.0.0", "Mcp-Method": "nope/nope"}
    no_caps = {META_VERSION: "v999.0.0"}
    error_of(await http.request("nope/nope", envelope=no_caps, headers=headers), -32602, 400)
    error_of(
        await http.request("nope/nope", envelope=meta("v999.0.0"), headers=_with(headers, Mcp_Method="x")), -32020, 400
    )
    error_of(await http.request("nope/nope", envelope=meta("v999.0.0"), headers=headers), -32022, 400)
    error_of(await http.request("nope/nope", headers=headers_for("nope/nope", None)), -32601, 404)


async def test_the_envelope_is_read_once_per_request(client: Modern, monkeypatch: pytest.MonkeyPatch) -> None:
    """One classification per request: the transport (HTTP) or the session (in-process), never both."""
    from elicitkit.protocol import modern

    original = modern.read_envelope
    calls: list[object] = []

    def counting(params: Any) -> Any:
        calls.append(params)
        return original(params)

    ours = [m for name, m in list(sys.modules.items()) if name.startswith("elicitkit") and m is not None]
    for module in ours:
        if getattr(module, "read_envelope", None) is original:
            monkeypatch.setattr(module, "read_envelope", counting)
    complete(await client.request("tools/list"))
    assert len(calls) == 1
    complete(await client.call("echo", {"text": "once"}))
    assert len(calls) == 2


async def test_missing_capability_is_400_with_required_capabilities_object(client: Modern) -> None:
    reply = await client.call("ask_model", {"question": "2+2?"}, envelope=meta(caps={"elicitation": {}}))
    error = error_of(reply, -32021, 400)
    assert error["data"] == {"requiredCapabilities": {"sampling": {}}}
    # Declared in the next request: asked as an input request instead, never sent as a request of its own.
    first = input_required(await client.call("ask_model", {"question": "2+2?"}))
    assert [(k, v["method"]) for k, v in first["inputRequests"].items()] == [("model", "sampling/createMessage")]
    sampled = {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m", "stopReason": "endTurn"}
    done = await client.call(
        "ask_model", {"question": "2+2?"}, responses={"model": sampled}, state=first["requestState"]
    )
    assert done.text == "model says: 4"


async def test_elicit_without_the_elicitation_capability_is_missing_capability(client: Modern) -> None:
    reply = await client.call("signup", {"greeting": "hi"}, envelope=meta(caps={"sampling": {}}))
    error = error_of(reply, -32021, 400)
    assert "elicitation" in error["data"]["requiredCapabilities"]


async def test_every_result_says_what_it_is_and_lists_say_how_long_to_keep_them(client: Modern) -> None:
    cacheable = {
        "tools/list": {},
        "prompts/list": {},
        "resources/list": {},
        "resources/templates/list": {},
        "resources/read": {"uri": "notes://readme"},
    }
    for method, params in cacheable.items():
        result = complete(await client.request(method, params))
        assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0, method
        assert result["cacheScope"] in ("public", "private"), method
        assert result["_meta"][META_SERVER_INFO]["name"] == "modern-test", method
    others = {
        "tools/call": {"name": "echo", "arguments": {"text": "x"}},
        "completion/complete": {
            "ref": {"type": "ref/prompt", "name": "write_about"},
            "argument": {"name": "topic", "value": "f"},
        },
    }
    for method, params in others.items():
        result = complete(await client.request(method, params))
        assert result["_meta"][META_SERVER_INFO]["name"] == "modern-test", method
    assert complete(await client.request("resources/read", {"uri": "notes://readme"}))["contents"][0]["text"] == (
        "read me"
    )
    # Input requests are for tools/call, prompts/get and resources/read only.
    for method in ("tools/list", "prompts/list"):
        assert complete(await client.request(method, {"inputResponses": {"x": accept()}}))


async def test_notifications_are_accepted_without_an_answer(http: Modern) -> None:
    wire = http.wire
    assert isinstance(wire, HttpWire)
    body = {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"_meta": meta()}}
    response = await wire.client.post(
        wire.url,
        content=orjson.dumps(body),
        headers={
            "Accept": ACCEPT,
            "Content-Type": "application/json",
            **headers_for("notifications/initialized", None),
        },
    )
    assert response.status_code == 202
    assert "mcp-session-id" not in response.headers


async def test_a_2026_request_ignores_a_session_id_header(http: Modern) -> None:
    headers = {**headers_for("tools/list", None), "Mcp-Session-Id": "not-a-session"}
    assert complete(await http.request("tools/list", headers=headers))["tools"]


async def test_a_2026_request_with_a_live_session_id_still_gets_its_headers_checked(http: Modern) -> None:
    wire = http.wire
    assert isinstance(wire, HttpWire)
    init = {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "legacy", "version": "0"}},
    }
    opened = await wire.client.post(
        wire.url, content=orjson.dumps(init), headers={"Accept": ACCEPT, "Content-Type": "application/json"}
    )
    session = opened.headers["mcp-session-id"]
    headers = {**headers_for("tools/call", CALL_ECHO), "Mcp-Name": "wrong", "Mcp-Session-Id": session}
    reply = await http.request("tools/call", CALL_ECHO, headers=headers)
    error_of(reply, -32020, 400)
    assert "mcp-session-id" not in reply.headers


async def test_a_2026_request_never_gets_a_session(http: Modern) -> None:
    reply = await http.request("tools/list")
    assert complete(reply)
    assert "mcp-session-id" not in reply.headers
    wire = http.wire
    assert isinstance(wire, HttpWire)
    got = await wire.client.get(wire.url, headers={"Accept": "text/event-stream", "MCP-Protocol-Version": V2026})
    assert got.status_code == 405


# ============================================================================ two eras, one server


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """The JSON messages of an SSE body, as they arrive (the priming event has no data)."""
    data: list[str] = []
    async for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "":
            if data and "".join(data):
                yield orjson.loads("".join(data))
            data = []


async def test_one_http_endpoint_serves_a_legacy_session_and_2026_requests_at_once(endpoint: HttpWire) -> None:
    wire = endpoint
    http, url, modern = wire.client, wire.url, Modern(wire)
    base = {"Accept": ACCEPT, "Content-Type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "legacy", "version": "0"},
        },
    }
    opened = await http.post(url, content=orjson.dumps(init), headers=base)
    assert opened.status_code == 200
    assert opened.json()["result"]["protocolVersion"] == LEGACY
    assert opened.json()["result"]["capabilities"]["logging"] == {}  # the legacy view keeps logging
    legacy = {**base, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, content=orjson.dumps(note), headers=legacy)).status_code == 202

    call = {
        "jsonrpc": "2.0",
        "id": "legacy-call",
        "method": "tools/call",
        "params": {"name": "signup", "arguments": {"greeting": "hello"}},
    }
    async with http.stream("POST", url, content=orjson.dumps(call), headers=legacy) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        events = _events(stream.aiter_lines())
        asked = await anext(events)
        assert asked["method"] == "elicitation/create" and "id" in asked
        assert asked["params"]["message"] == "What is your name?"

        # While the legacy call waits for its user, 2026 requests are served on the same endpoint.
        first = input_required(await modern.call("signup", {"greeting": "hey"}))
        assert "mcp-session-id" not in (await modern.request("tools/list")).headers
        assert first["inputRequests"]["name"]["params"]["message"] == "What is your name?"

        answer = {"jsonrpc": "2.0", "id": asked["id"], "result": accept(name="Ada")}
        assert (await http.post(url, content=orjson.dumps(answer), headers=legacy)).status_code == 202
        asked_again = await anext(events)
        assert asked_again["params"]["message"] == "How old are you, Ada?"

        second = input_required(
            await modern.call(
                "signup", {"greeting": "hey"}, responses={"name": accept(name="Bo")}, state=first["requestState"]
            )
        )
        assert second["inputRequests"]["age"]["params"]["message"] == "How old are you, Bo?"

        answer = {"jsonrpc": "2.0", "id": asked_again["id"], "result": accept(age=36)}
        assert (await http.post(url, content=orjson.dumps(answer), headers=legacy)).status_code == 202
        final = await anext(events)
        assert final["id"] == "legacy-call"
        assert final["result"]["content"] == [{"type": "text", "text": "hello, Ada (36)"}]
        assert "resultType" not in final["result"]  # a 2025 result is not stamped

    done = await modern.call(
        "signup", {"greeting": "hey"}, responses={"age": accept(age=7)}, state=second["requestState"]
    )
    assert done.text == "hey, Bo (7)"
    # The session still works the legacy way, and 2026 still refuses what 2026 removed.
    ping = {"jsonrpc": "2.0", "id": "p", "method": "ping"}
    assert (await http.post(url, content=orjson.dumps(ping), headers=legacy)).json()["result"] == {}
    error_of(await modern.request("ping"), -32601, 404)


class _Stdio:
    """Newline-delimited JSON to and from a spawned ``modern_server.py``; every message kept."""

    def __init__(self, process: Any) -> None:
        self.process = process
        self.buffer = b""
        self.seen: list[dict[str, Any]] = []
        self.unread: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        await self.process.stdin.send(orjson.dumps(message) + b"\n")

    async def next(self, predicate: Any) -> dict[str, Any]:
        with anyio.fail_after(10):
            while True:
                for index, message in enumerate(self.unread):
                    if predicate(message):
                        return self.unread.pop(index)
                while b"\n" not in self.buffer:
                    self.buffer += await self.process.stdout.receive()
                line, self.buffer = self.buffer.split(b"\n", 1)
                if line.strip():
                    message = orjson.loads(line)
                    self.seen.append(message)
                    self.unread.append(message)

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        await self.send(message)
        return await self.next(lambda m: m.get("id") == message["id"] and "method" not in m)


def _modern_call(request_id: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    params = {"name": "signup", "arguments": arguments, "_meta": meta(), **extra}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def test_one_stdio_process_serves_a_legacy_client_and_2026_requests_at_once(tmp_path: Path) -> None:
    stderr = (tmp_path / "stderr.txt").open("wb")
    process = await anyio.open_process(
        [sys.executable, str(MODERN_SERVER), "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
    )
    try:
        peer = _Stdio(process)
        # A 2026 request before any handshake is served statelessly.
        discovered = await peer.request(
            {"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": meta()}}
        )
        assert V2026 in discovered["result"]["supportedVersions"]
        init = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "legacy", "version": "0"},
            },
        }
        assert (await peer.request(init))["result"]["protocolVersion"] == LEGACY
        await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        await peer.send(
            {
                "jsonrpc": "2.0",
                "id": "legacy",
                "method": "tools/call",
                "params": {"name": "signup", "arguments": {"greeting": "hello"}},
            }
        )
        asked = await peer.next(lambda m: m.get("method") == "elicitation/create")
        assert asked["params"]["message"] == "What is your name?"

        first = (await peer.request(_modern_call("m1", {"greeting": "hey"})))["result"]
        assert first["resultType"] == "input_required"
        await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": accept(name="Ada")})
        asked_again = await peer.next(lambda m: m.get("method") == "elicitation/create")
        assert asked_again["params"]["message"] == "How old are you, Ada?"

        second = (
            await peer.request(
                _modern_call(
                    "m2",
                    {"greeting": "hey"},
                    inputResponses={"name": accept(name="Bo")},
                    requestState=first["requestState"],
                )
            )
        )["result"]
        assert second["inputRequests"]["age"]["params"]["message"] == "How old are you, Bo?"
        await peer.send({"jsonrpc": "2.0", "id": asked_again["id"], "result": accept(age=36)})
        legacy_done = await peer.next(lambda m: m.get("id") == "legacy" and "method" not in m)
        assert legacy_done["result"]["content"] == [{"type": "text", "text": "hello, Ada (36)"}]

        done = (
            await peer.request(
                _modern_call(
                    "m3",
                    {"greeting": "hey"},
                    inputResponses={"age": accept(age=7)},
                    requestState=second["requestState"],
                )
            )
        )["result"]
        assert done["content"] == [{"type": "text", "text": "hey, Bo (7)"}]
        assert done["resultType"] == "complete"

        # Legacy ping works on the session; a 2026 ping is refused on the same process.
        assert (await peer.request({"jsonrpc": "2.0", "id": "p1", "method": "ping"}))["result"] == {}
        modern_ping = await peer.request({"jsonrpc": "2.0", "id": "p2", "method": "ping", "params": {"_meta": meta()}})
        assert modern_ping["error"]["code"] == -32601
        # The only server-to-client requests were the legacy call's two questions.
        requests = [m for m in peer.seen if "method" in m and "id" in m]
        assert [m["params"]["message"] for m in requests] == ["What is your name?", "How old are you, Ada?"]
    finally:
        with anyio.CancelScope(shield=True):
            await process.stdin.aclose()
            with anyio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            await process.aclose()
            stderr.close()


# ============================================================================ multi-round-trip


async def test_two_questions_over_three_rounds(client: Modern) -> None:
    first = input_required(await client.call("signup", {"greeting": "hi"}))
    assert list(first["inputRequests"]) == ["name"]
    question = first["inputRequests"]["name"]
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == "What is your name?"
    assert question["params"]["requestedSchema"]["properties"]["name"]["type"] == "string"
    assert "elicitationId" not in question["params"]

    second = input_required(
        await client.call(
            "signup", {"greeting": "hi"}, responses={"name": accept(name="Ada")}, state=first["requestState"]
        )
    )
    assert list(second["inputRequests"]) == ["age"]
    assert second["inputRequests"]["age"]["params"]["message"] == "How old are you, Ada?"
    assert second["requestState"] != first["requestState"]

    # The recorded name travels in the state: the last retry answers only the open question.
    done = await client.call(
        "signup", {"greeting": "hi"}, responses={"age": accept(age=36)}, state=second["requestState"]
    )
    assert complete(done)["content"] == [{"type": "text", "text": "hi, Ada (36)"}]
    assert done.result["_meta"][META_SERVER_INFO]["name"] == "modern-test"
    if isinstance(client.wire, MemoryWire):  # every question travelled in a result, none as a request
        assert [m for m in client.wire.outgoing if "method" in m] == []


async def test_all_answers_at_once_complete_without_state(client: Modern) -> None:
    done = await client.call("signup", {"greeting": "yo"}, responses={"name": accept(name="Cy"), "age": accept(age=5)})
    assert done.text == "yo, Cy (5)"


async def test_a_decline_reaches_the_tool(client: Modern) -> None:
    first = input_required(await client.call("signup", {"greeting": "hi"}))
    done = await client.call(
        "signup", {"greeting": "hi"}, responses={"name": {"action": "decline"}}, state=first["requestState"]
    )
    assert done.text == "no name (decline)"


async def test_a_resolver_asks_before_the_body_runs(client: Modern) -> None:
    listed = complete(await client.request("tools/list"))
    remove = next(tool for tool in listed["tools"] if tool["name"] == "remove")
    assert list(remove["inputSchema"]["properties"]) == ["path"]  # the resolved parameter is not an argument

    first = input_required(await client.call("remove", {"path": "/tmp/x"}))
    assert list(first["inputRequests"]) == ["confirm"]
    assert first["inputRequests"]["confirm"]["params"]["message"] == "Remove /tmp/x?"
    yes = await client.call(
        "remove", {"path": "/tmp/x"}, responses={"confirm": accept(ok=True)}, state=first["requestState"]
    )
    assert yes.text == "removed /tmp/x"
    no = await client.call(
        "remove", {"path": "/tmp/x"}, responses={"confirm": {"action": "cancel"}}, state=first["requestState"]
    )
    assert no.text == "kept /tmp/x (cancel)"


async def test_a_prompt_that_asks(client: Modern) -> None:
    first = input_required(await client.prompt("write_about", {"topic": "tea"}))
    assert first["inputRequests"]["tone"]["params"]["message"] == "Which tone?"
    tones = first["inputRequests"]["tone"]["params"]["requestedSchema"]["properties"]["tone"]
    assert tones["enum"] == ["formal", "casual"]
    done = complete(
        await client.prompt(
            "write_about", {"topic": "tea"}, responses={"tone": accept(tone="casual")}, state=first["requestState"]
        )
    )
    assert done["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Write about tea in a casual tone."}}
    ]
    assert done["_meta"][META_SERVER_INFO]["name"] == "modern-test"


async def test_a_template_resource_that_asks(client: Modern) -> None:
    uri = "notes://ada/secret"
    first = input_required(await client.read(uri))
    assert first["inputRequests"]["show"]["params"]["message"] == "Show the secret note of ada?"
    assert "ttlMs" not in first  # only complete results carry cache hints
    done = complete(await client.read(uri, responses={"show": accept(ok=True)}, state=first["requestState"]))
    assert done["contents"] == [{"uri": uri, "mimeType": "text/plain", "text": "ada's secret: 42"}]
    assert done["cacheScope"] == "private"


async def test_missing_input_responses_ask_again(client: Modern) -> None:
    first = input_required(await client.call("signup", {"greeting": "hi"}))
    for retry in (
        await client.call("signup", {"greeting": "hi"}, state=first["requestState"]),
        await client.call("signup", {"greeting": "hi"}, responses={}, state=first["requestState"]),
    ):
        again = input_required(retry)
        assert again["inputRequests"] == first["inputRequests"]
        assert again["requestState"] != first["requestState"]


async def test_input_responses_null_is_no_answer(client: Modern) -> None:
    reply = await client.request(
        "tools/call", {"name": "signup", "arguments": {"greeting": "hi"}, "inputResponses": None}
    )
    assert list(input_required(reply)["inputRequests"]) == ["name"]


async def test_extra_response_keys_are_ignored(client: Modern) -> None:
    extra = {"name": accept(name="Ada"), "unrelated": accept(x=1), "junk": {"whatever": True}}
    reply = input_required(await client.call("signup", {"greeting": "hi"}, responses=extra))
    assert list(reply["inputRequests"]) == ["age"]
    done = await client.call(
        "signup", {"greeting": "hi"}, responses={"age": accept(age=1), "extra": accept()}, state=reply["requestState"]
    )
    assert done.text == "hi, Ada (1)"


async def test_wrongly_keyed_answers_ask_again(client: Modern) -> None:
    first = input_required(await client.call("signup", {"greeting": "hi"}))
    wrong = await client.call(
        "signup", {"greeting": "hi"}, responses={"user_name": accept(name="Ada")}, state=first["requestState"]
    )
    assert list(input_required(wrong)["inputRequests"]) == ["name"]
    # ... also on a first call without any state (conformance "missing-input-response").
    fresh = await client.call("signup", {"greeting": "hi"}, responses={"wrong_key": accept(name="Ada")})
    assert list(input_required(fresh)["inputRequests"]) == ["name"]


@pytest.mark.parametrize(
    "responses",
    [
        pytest.param({"name": "Ada"}, id="entry-a-string"),
        pytest.param({"name": ["accept"]}, id="entry-a-list"),
        pytest.param({"name": None}, id="entry-null"),
        pytest.param(["name"], id="responses-a-list"),
        pytest.param("name=Ada", id="responses-a-string"),
    ],
)
async def test_malformed_input_responses_are_invalid_params(client: Modern, responses: Any) -> None:
    first = input_required(await client.call("signup", {"greeting": "hi"}))
    reply = await client.call("signup", {"greeting": "hi"}, responses=responses, state=first["requestState"])
    error_of(reply, -32602, 400)


async def test_an_unknown_action_is_invalid_params(client: Modern) -> None:
    first = input_required(await client.call("signup", {"greeting": "hi"}))
    reply = await client.call(
        "signup", {"greeting": "hi"}, responses={"name": {"action": "maybe"}}, state=first["requestState"]
    )
    error_of(reply, -32602, 400)


@pytest.mark.parametrize(
    ("key", "answer", "reason"),
    [
        pytest.param("name", accept(name=""), "non-empty", id="too-short"),
        pytest.param("name", accept(name=12345), "name", id="wrong-type"),
        pytest.param("name", accept(), "name", id="required-missing"),
        pytest.param("age", accept(age=400), "age", id="out-of-range"),
    ],
)
async def test_invalid_content_is_asked_again_not_completed(client: Modern, key: str, answer: Any, reason: str) -> None:
    state = input_required(await client.call("signup", {"greeting": "hi"}))["requestState"]
    responses: dict[str, Any] = {}
    if key == "age":
        got = input_required(
            await client.call("signup", {"greeting": "hi"}, responses={"name": accept(name="Ada")}, state=state)
        )
        state = got["requestState"]
    responses[key] = answer
    again = input_required(await client.call("signup", {"greeting": "hi"}, responses=responses, state=state))
    assert list(again["inputRequests"]) == [key]
    message = again["inputRequests"][key]["params"]["message"]
    assert "not accepted" in message and reason in message
    fixed = {"name": accept(name="Ada")} if key == "name" else {"age": accept(age=40)}
    retried = await client.call("signup", {"greeting": "hi"}, responses=fixed, state=again["requestState"])
    if key == "name":
        assert list(input_required(retried)["inputRequests"]) == ["age"]
    else:
        assert retried.text == "hi, Ada (40)"


# ============================================================================ sealed state that does not open


class Clock:
    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


def frozen(reply: Reply) -> None:
    """The one error every bad state gets: -32602, HTTP 400, the public message, no data."""
    reply.expect_status(400)
    assert reply.error == {"code": -32602, "message": PUBLIC_MESSAGE}


def logged(caplog: pytest.LogCaptureFixture) -> str:
    records = [r for r in caplog.records if r.name == "elicitkit.mrtr" and "rejected requestState" in r.getMessage()]
    assert len(records) == 1, [r.getMessage() for r in caplog.records]
    return records[0].getMessage()


def _flip(token: str) -> str:
    middle = len(token) // 2
    return token[:middle] + ("A" if token[middle] != "A" else "B") + token[middle + 1 :]


@pytest.mark.parametrize(
    ("mangle", "cause"),
    [
        pytest.param(_flip, "authentication failed", id="one-character-changed"),
        pytest.param(lambda t: t + "-TAMPERED", "", id="suffix-appended"),
        pytest.param(lambda t: t[: len(t) // 2], "", id="cut-in-half"),
        pytest.param(lambda t: ".".join(t.split(".")[:2]) + ".AAAA", "truncated", id="cut-to-nothing"),
        pytest.param(lambda t: "v9" + t[2:], "bad prefix", id="other-version"),
        pytest.param(lambda t: "v1" + t[2:], "authentication failed", id="read-as-v1"),
        pytest.param(lambda t: 12345, "not a string", id="not-a-string"),
        pytest.param(lambda t: "", "bad prefix", id="empty"),
    ],
)
async def test_tampered_or_truncated_state_is_refused(
    client: Modern, caplog: pytest.LogCaptureFixture, mangle: Any, cause: str
) -> None:
    caplog.set_level(logging.WARNING, logger="elicitkit.mrtr")
    first = input_required(await client.call("signup", {"greeting": "hi"}))
    bad = mangle(first["requestState"])
    frozen(await client.call("signup", {"greeting": "hi"}, responses={"name": accept(name="Ada")}, state=bad))
    message = logged(caplog)
    assert "tools/call signup" in message and cause in message
    assert first["requestState"] not in message  # the log names the cause, not the token


async def _restarts_cleanly(client: Modern) -> None:
    """After any refusal a call without state starts from the first question and completes."""
    first = input_required(await client.call("signup", {"greeting": "hi"}))
    assert list(first["inputRequests"]) == ["name"]
    done = await client.call(
        "signup",
        {"greeting": "hi"},
        responses={"name": accept(name="Z"), "age": accept(age=2)},
        state=first["requestState"],
    )
    assert done.text == "hi, Z (2)"


async def test_expired_state_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="elicitkit.mrtr")
    clock = Clock()
    server = build_server(AeadStateCodec(KeyRing.generate(), ttl_seconds=60, clock=clock))
    for wire_of in (memory_wire, http_wire):
        caplog.clear()
        async with wire_of(server) as wire:
            client = Modern(wire)
            first = input_required(await client.call("signup", {"greeting": "hi"}))
            clock.now += 59
            still = await client.call("signup", {"greeting": "hi"}, state=first["requestState"])
            assert list(input_required(still)["inputRequests"]) == ["name"]
            clock.now += 2  # 61 s after sealing: past the 60 s lifetime
            frozen(
                await client.call(
                    "signup", {"greeting": "hi"}, responses={"name": accept(name="A")}, state=first["requestState"]
                )
            )
            assert "expired" in logged(caplog)
            await _restarts_cleanly(client)


async def test_state_replayed_against_another_tool_is_refused(client: Modern, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="elicitkit.mrtr")
    state = input_required(await client.call("signup", {"greeting": "hi"}))["requestState"]
    frozen(await client.call("signup_copy", {"greeting": "hi"}, responses={"name": accept(name="A")}, state=state))
    assert "another target" in logged(caplog)
    await _restarts_cleanly(client)


async def test_state_replayed_against_another_method_is_refused(
    client: Modern, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="elicitkit.mrtr")
    state = input_required(await client.prompt("write_about", {"topic": "tea"}))["requestState"]
    frozen(await client.call("signup", {"greeting": "hi"}, state=state))
    assert "another method" in logged(caplog)


async def test_state_replayed_with_other_arguments_is_refused(client: Modern, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="elicitkit.mrtr")
    state = input_required(await client.call("signup", {"greeting": "hi"}))["requestState"]
    frozen(await client.call("signup", {"greeting": "HI"}, responses={"name": accept(name="A")}, state=state))
    assert "other arguments" in logged(caplog)
    # Resources bind their URI the same way.
    caplog.clear()
    state = input_required(await client.read("notes://ada/secret"))["requestState"]
    frozen(await client.read("notes://bob/secret", responses={"show": accept(ok=True)}, state=state))
    assert "another target" in logged(caplog)
    await _restarts_cleanly(client)


async def test_state_sealed_with_another_key_is_refused(client: Modern, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="elicitkit.mrtr")
    async with memory_wire(build_server()) as other_wire:  # same tools, its own fresh key
        foreign = input_required(await Modern(other_wire).call("signup", {"greeting": "hi"}))["requestState"]
    frozen(await client.call("signup", {"greeting": "hi"}, responses={"name": accept(name="A")}, state=foreign))
    assert "unknown key id" in logged(caplog)
    await _restarts_cleanly(client)


async def test_every_refusal_reads_the_same(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    """Whatever the cause, the client sees byte-identical errors (only the id differs)."""
    caplog.set_level(logging.WARNING, logger="elicitkit.mrtr")
    async with memory_wire(server) as wire:
        client = Modern(wire)
        state = input_required(await client.call("signup", {"greeting": "hi"}))["requestState"]
        async with memory_wire(build_server()) as other_wire:
            foreign = input_required(await Modern(other_wire).call("signup", {"greeting": "hi"}))["requestState"]
        replies = [
            await client.call("signup", {"greeting": "hi"}, state=_flip(state)),
            await client.call("signup", {"greeting": "hi"}, state=state[:40]),
            await client.call("signup_copy", {"greeting": "hi"}, state=state),
            await client.call("signup", {"greeting": "other"}, state=state),
            await client.call("signup", {"greeting": "hi"}, state=foreign),
        ]
    assert len({orjson.dumps(reply.error) for reply in replies}) == 1
    causes = [r.getMessage() for r in caplog.records if r.name == "elicitkit.mrtr"]
    assert len(causes) == 5 and len(set(causes)) == 5  # the log tells them apart
