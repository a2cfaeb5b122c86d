"""In-memory transport: a client and a server session in one process, for tests and benchmarks.

Messages still go through the JSON codec both ways, so what works here works on a wire.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from elicitkit.peer import Send
from elicitkit.protocol.jsonrpc import JSON, RequestId, encode
from elicitkit.transports.base import Feed, OnClose

if TYPE_CHECKING:
    from elicitkit.server.lowlevel import LowLevelServer


class MemoryTransport:
    """Connects a :class:`~elicitkit.Client` straight to a server object."""

    per_message_headers = False  # nothing to put them in

    def __init__(self, server: LowLevelServer) -> None:
        self.server = server

    def describe(self) -> str:
        return f"in-memory:{self.server.name}"

    def set_protocol_version(self, version: str) -> None:
        return None

    async def start_listening(self) -> None:
        return None  # one duplex channel carries everything already

    @asynccontextmanager
    async def open(self, feed: Feed, on_close: OnClose) -> AsyncIterator[Send]:
        async def to_client(message: JSON, related: RequestId | None) -> None:
            await feed(encode(message))

        session = self.server.create_session(to_client)

        async def to_server(message: JSON, related: RequestId | None, headers: dict[str, str] | None = None) -> None:
            await session.peer.feed(encode(message))

        async with session.peer:
            try:
                yield to_server
            finally:
                session.peer.close("client disconnected")
