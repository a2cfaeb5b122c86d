"""In-memory transport: a client and a server session in one process, for tests and benchmarks.

Messages still go through the JSON codec both ways, so what works here works on a wire.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager

from elicitkit.protocol.jsonrpc import JSON, RequestId, encode
from elicitkit.runtime.contract import Endpoint, Send
from elicitkit.transports.base import Feed, OnClose


class MemoryTransport:
    """Connects a :class:`~elicitkit.Client` straight to a server object."""

    per_message_headers = False  # nothing to put them in

    def __init__(self, server: Endpoint) -> None:
        self.server = server

    def describe(self) -> str:
        return f"in-memory:{self.server.name}"

    def set_stateless(self, stateless: bool) -> None:
        return None  # no sessions, no second stream, nothing to resume either way

    def set_protocol_version(self, version: str) -> None:
        return None

    async def start_listening(self) -> None:
        return None  # one duplex channel carries everything already

    @asynccontextmanager
    async def open(self, feed: Feed, on_close: OnClose) -> AsyncIterator[Send]:
        # Plain functions handing back the other side's feed: what a send returns is awaited by
        # the caller, so a message costs no coroutine frame of its own here, either way.
        def to_client(message: JSON, related: RequestId | None) -> Awaitable[None]:
            return feed(encode(message))

        session = self.server.create_session(to_client)

        def to_server(
            message: JSON, related: RequestId | None, headers: dict[str, str] | None = None
        ) -> Awaitable[None]:
            return session.feed(encode(message))

        async with session:
            try:
                yield to_server
            finally:
                session.close("client disconnected")
