"""What a client transport is: something that, given where to deliver incoming data, yields a send.

Transports move bytes and map their medium onto JSON-RPC messages; they know nothing about
MCP methods, eras or elicitation. The send they yield is called as ``send(message, related)``,
or, when the transport's ``per_message_headers`` is true (HTTP), as
``send(message, related, headers=...)`` with headers for that one message.
``set_stateless(True)``: no sessions, no standalone stream, nothing to resume (a no-op where
the medium has none of those). Every member is named here: the client calls no other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from elicitkit.runtime.contract import Incoming, Send

Feed = Callable[[Incoming], Awaitable[None]]
OnClose = Callable[[str], None]


class ClientTransport(Protocol):
    @property
    def per_message_headers(self) -> bool:
        """The send takes ``headers=`` for one message (HTTP's ``Mcp-*`` headers on 2026)."""
        ...

    def set_stateless(self, stateless: bool) -> None:
        """Serve no session state from now on (2026-07-28), or keep it (a handshake era)."""
        ...

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
