"""The seam between transports and sessions: only the typed contract crosses it."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from elicitkit.protocol.jsonrpc import JSON, RequestId
from elicitkit.runtime.contract import Endpoint, SessionPort
from elicitkit.server import Server
from elicitkit.server.context import Context
from kit.raw import wait_until

pytestmark = pytest.mark.anyio

SRC = Path(__file__).resolve().parents[2] / "src" / "elicitkit"


def _imports(path: Path) -> set[str]:
    """Every module a file imports, with relative imports resolved, including TYPE_CHECKING ones."""
    package = ".".join(("elicitkit", *path.relative_to(SRC).with_suffix("").parts[:-1]))
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.add(f"{base}.{node.module}" if node.module else base)
            elif node.module:
                found.add(node.module)
    return found


@pytest.mark.parametrize("layer", ["transports", "runtime", "protocol"])
def test_lower_layers_import_neither_server_nor_client(layer: str) -> None:
    """Transports move messages through runtime/; they must not reach into either side's insides.

    Nor into auth/: the HTTP transport authorizes through its own hook (transports/http/auth.py).
    """
    offenders = {
        f"{path.relative_to(SRC)} imports {name}"
        for path in sorted((SRC / layer).rglob("*.py"))
        for name in _imports(path)
        if name.startswith(("elicitkit.server", "elicitkit.client", "elicitkit.auth"))
    }
    assert not offenders


def test_auth_imports_neither_server_nor_client() -> None:
    """The OAuth client is below Client: client/ may use it, never the other way round."""
    offenders = {
        f"{path.relative_to(SRC)} imports {name}"
        for path in sorted((SRC / "auth").rglob("*.py"))
        for name in _imports(path)
        if name.startswith(("elicitkit.server", "elicitkit.client"))
    }
    assert not offenders


def test_protocol_and_runtime_stay_below_transports() -> None:
    offenders = {
        f"{path.relative_to(SRC)} imports {name}"
        for layer in ("protocol", "runtime")
        for path in sorted((SRC / layer).rglob("*.py"))
        for name in _imports(path)
        if name.startswith("elicitkit.transports")
    }
    assert not offenders


class FakeStreams:
    """A transport's per-request stream control, recording what the session asked of it."""

    def __init__(self) -> None:
        self.closed: list[tuple[RequestId, int]] = []
        self.unanswered: list[RequestId] = []

    def close_stream(self, request_id: RequestId, retry_ms: int) -> bool:
        self.closed.append((request_id, retry_ms))
        return True

    def request_unanswered(self, request_id: RequestId) -> None:
        self.unanswered.append(request_id)


def _server() -> Server:
    server = Server("contract")

    @server.tool()
    async def detach(ctx: Context) -> str:
        """Ends its own stream early, then answers."""
        return "closed" if ctx.close_sse_stream(2500) else "kept"

    @server.tool()
    async def forever() -> str:
        """Never answers on its own."""
        await anyio.sleep_forever()
        return "never"

    return server


def _init(request_id: int) -> JSON:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }


def _call(request_id: int, name: str) -> JSON:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": {}}}


async def _answer(sent: list[JSON], request_id: int) -> JSON:
    await wait_until(lambda: any(m.get("id") == request_id for m in sent), what=f"answer {request_id}")
    return next(m for m in sent if m.get("id") == request_id)


async def test_a_transport_drives_a_session_through_the_contract_alone() -> None:
    """feed / cancel / close / protocol_version and stream control are all a transport needs."""
    sent: list[JSON] = []

    async def send(message: JSON, related: RequestId | None) -> None:
        sent.append(message)

    endpoint: Endpoint = _server()
    streams = FakeStreams()
    port: SessionPort = endpoint.create_session(send, streams=streams)
    async with port:
        assert port.protocol_version is None
        await port.feed(orjson.dumps(_init(1)))
        assert (await _answer(sent, 1))["result"]["protocolVersion"] == "2025-11-25"
        await port.feed({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert port.protocol_version == "2025-11-25"

        await port.feed(orjson.dumps(_call(2, "detach")))
        result: dict[str, Any] = (await _answer(sent, 2))["result"]
        assert result["content"][0]["text"] == "closed"
        assert streams.closed == [(2, 2500)]

        await port.feed(orjson.dumps(_call(3, "forever")))
        await asyncio.sleep(0.05)
        port.cancel(3)
        await wait_until(lambda: 3 in streams.unanswered, what="the transport to hear of the cancellation")
        assert not any(m.get("id") == 3 for m in sent)  # a cancelled request gets no answer
        port.close("test done")


async def test_without_stream_control_closing_a_stream_is_refused() -> None:
    sent: list[JSON] = []

    async def send(message: JSON, related: RequestId | None) -> None:
        sent.append(message)

    port = _server().create_session(send)
    async with port:
        await port.feed(_init(1))
        await _answer(sent, 1)
        await port.feed({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await port.feed(_call(2, "detach"))
        assert (await _answer(sent, 2))["result"]["content"][0]["text"] == "kept"
