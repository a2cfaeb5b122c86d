"""What a client transport is: something that, given where to deliver incoming data, yields a send.

Transports move bytes and map their medium onto JSON-RPC messages; they know nothing about
MCP methods, eras or elicitation. The send they yield is called as ``send(message, related)``,
or, when the transport's ``per_message_headers`` is true (HTTP), as
``send(message, related, headers=...)`` with headers for that one message. A transport may
also offer ``set_stateless(bool)``: no sessions, no standalone stream, nothing to resume.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from elicitkit.runtime.contract import Incoming, Send

Feed = Callable[[Incoming], Awaitable[None]]
OnClose = Callable[[str], None]


class ClientTransport(Protocol):
    # Optional: ``per_message_headers: bool`` and ``set_stateless(stateless: bool) -> None``.

    def open(self, feed: Feed, on_close: OnClose) -> AbstractAsyncContextManager[Send]:
        """Connect; what arrives goes to ``feed``, the end of the stream to ``on_close``; yields a send."""
        ...

    def set_protocol_version(self, version: str) -> None:
        """Told once the handshake settled the version (HTTP puts it in a header)."""
        ...

    async def start_listening(self) -> None:
        """Open a channel for messages the server sends outside any request (HTTP: the GET stream)."""
        ...

    def describe(self) -> str:
        """Where the server is, for people: a command line or a URL."""
        ...
