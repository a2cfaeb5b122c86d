"""Hand-written clients that speak raw JSON-RPC to our server, so a test can send answers the
real :class:`~elicitkit.Client` would never send (invalid content, late answers).

``memory_peer(server)`` talks to a server object in this process through a
:class:`~elicitkit.server.session.ServerSession`, exactly as the in-memory transport does;
``stdio_peer(tmp_path)`` spawns ``elicit_server.py`` and talks newline-delimited JSON to it.
Both expose the same small interface: ``send``, ``recv``, ``initialize``, ``call``, ``answer``.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
from anyio.abc import Process

from elicitkit.protocol.jsonrpc import JSON, RequestId, encode
from elicitkit.server.lowlevel import LowLevelServer
from kit.processes import stop_child

SERVER_SCRIPT = Path(__file__).resolve().parent / "elicit_server.py"


class RawPeer:
    """The common half: JSON-RPC helpers over an abstract ``send``/``_receive``."""

    def __init__(self) -> None:
        self._next = 0
        self.received: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    async def _receive(self) -> dict[str, Any]:
        raise NotImplementedError

    async def recv(self, timeout: float = 5.0) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            message = await self._receive()
        self.received.append(message)
        return message

    async def recv_until(self, predicate: Any, timeout: float = 5.0) -> dict[str, Any]:
        """Read (and keep in ``received``) until a message matches."""
        with anyio.fail_after(timeout):
            while True:
                message = await self.recv(timeout)
                if predicate(message):
                    return message

    def next_id(self) -> str:
        self._next += 1
        return f"raw-{self._next}"

    async def initialize(self, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None) -> JSON:
        request_id = self.next_id()
        caps = {"elicitation": {"form": {}, "url": {}}} if capabilities is None else capabilities
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": caps,
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            }
        )
        answer = await self.recv_until(lambda m: m.get("id") == request_id)
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    async def call(self, tool: str, **arguments: Any) -> str:
        request_id = self.next_id()
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        )
        return request_id

    async def answer(self, request_id: RequestId, result: dict[str, Any]) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def next_elicitation(self, timeout: float = 5.0) -> dict[str, Any]:
        return await self.recv_until(lambda m: m.get("method") == "elicitation/create", timeout)

    async def response_to(self, request_id: RequestId, timeout: float = 5.0) -> dict[str, Any]:
        return await self.recv_until(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    async def ping(self) -> None:
        request_id = self.next_id()
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
        assert await self.response_to(request_id) == {"jsonrpc": "2.0", "id": request_id, "result": {}}


class MemoryPeer(RawPeer):
    def __init__(self, server: LowLevelServer) -> None:
        super().__init__()
        self._out, self._in = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        self.session = server.create_session(self._to_client)

    async def _to_client(self, message: JSON, related: RequestId | None) -> None:
        await self._out.send(orjson.loads(encode(message)))

    async def send(self, message: dict[str, Any]) -> None:
        await self.session.peer.feed(orjson.dumps(message))

    async def _receive(self) -> dict[str, Any]:
        return await self._in.receive()


@asynccontextmanager
async def memory_peer(server: LowLevelServer) -> AsyncIterator[MemoryPeer]:
    peer = MemoryPeer(server)
    async with peer.session.peer:
        try:
            yield peer
        finally:
            peer.session.peer.close("raw peer done")


class StdioPeer(RawPeer):
    def __init__(self, process: Process, stderr_path: Path) -> None:
        super().__init__()
        self.process = process
        self.stderr_path = stderr_path
        self._buffer = b""
        self._lines: list[bytes] = []

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(orjson.dumps(message) + b"\n")

    async def _receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while not self._lines:
            self._buffer += await self.process.stdout.receive()
            *complete, self._buffer = self._buffer.split(b"\n")
            self._lines.extend(line for line in complete if line.strip())
        return orjson.loads(self._lines.pop(0))  # type: ignore[no-any-return]

    async def wait_for_stderr(self, text: str, timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            while text not in self.stderr:  # noqa: ASYNC110 - a file has nothing to wait on
                await anyio.sleep(0.02)


@asynccontextmanager
async def stdio_peer(tmp_path: Path) -> AsyncIterator[StdioPeer]:
    stderr_path = tmp_path / "raw-server-stderr.txt"
    with stderr_path.open("wb") as stderr:
        process = await anyio.open_process(
            [sys.executable, str(SERVER_SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
    try:
        yield StdioPeer(process, stderr_path)
    finally:
        await stop_child(process)
