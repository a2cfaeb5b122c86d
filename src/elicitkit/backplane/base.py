"""The backplane: what the instances of one fleet share, behind one small interface.

A transport with sessions (Streamable HTTP on the 2025 eras) keeps each session in the memory
of the instance that opened it: its *owner*. Behind a round-robin balancer the next request of
that session lands anywhere, so an instance must be able to ask "who owns this session?", hand
the owner a message and carry the owner's reply back to its client. That is all a backplane
does, in transport-neutral terms:

- a **registry**: which live instance owns a session (:meth:`Backplane.claim`,
  :meth:`~Backplane.owner`, :meth:`~Backplane.release`); instances prove they are alive with a
  heartbeat, so a dead owner's sessions stop resolving;
- **messages** to one instance's inbox (:meth:`~Backplane.send`), received by the transport
  :meth:`attached <Backplane.attach>` to it (an :class:`Inbox`);
- **event streams**: the events of one session's stream, recorded with bounded retention
  (:meth:`~Backplane.record`) so any instance can replay them (:meth:`~Backplane.replay`) and
  follow the live ones (:meth:`~Backplane.follow`);
- **broadcasts** to every other instance (list changes, resource updates);
- **page storage**, a separate small key-value space (:meth:`~Backplane.page_put`,
  :meth:`~Backplane.page_get`, :meth:`~Backplane.page_take`, :meth:`~Backplane.page_delete`):
  the server's form pages, their answers and the claim secret, so a page opened on one
  instance is shown, answered and delivered through any other. It is apart from the rest so
  that whatever seals what crosses the store can wrap it on its own.

:class:`~elicitkit.backplane.local.InProcessBackplane` is the default: one process, nothing to
share, and the transports never call it on a request's path (``shared`` is False).
:class:`~elicitkit.backplane.redis.RedisBackplane` is the fleet.

This package sits beside the transports: it imports nothing from ``elicitkit.server`` or
``elicitkit.client`` and knows nothing of MCP methods beyond the JSON they travel in.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from elicitkit.backplane.sealing import Sealer
from elicitkit.protocol.jsonrpc import JSON

# One event of a recorded stream: (seq, payload or error body, kind). Kinds:
EVENT = "e"  # a message of the stream; ``final`` in the flags: the request's response
FINAL = "f"  # the request's response: the last event
END = "x"  # the request ended without a response (cancelled, or its session ended)
DETACH = "d"  # the owner ends the live connection; the client resumes (payload: retry ms)
REJECT = "r"  # the owner refused the forwarded request (payload: the JSON error; seq: HTTP status)
ATTACHED = "a"  # the owner publishes a stream it held alone, from the cursor asked for on

Event = tuple[int, bytes, str]
Broadcast = Callable[[str, "dict[str, Any] | None"], Awaitable[None]]


class Inbox(Protocol):
    """What an instance does with what other instances send it (the HTTP endpoint implements it)."""

    async def receive(self, message: JSON) -> None:
        """A message from another instance, already authenticated."""
        ...

    async def deliver(self, session_id: str, message: JSON) -> bool:
        """Put a server-to-client message on a local session's stream; False: not a session of ours."""
        ...

    def lost_contact(self) -> None:
        """The backplane lost its shared store: end what depended on it (in-flight forwarded calls)."""
        ...

    def regained_contact(self) -> None:
        """The shared store is back: end the calls that ran without it (their answers may have been refused)."""
        ...

    def owners_gone(self, owners: Iterable[str]) -> None:
        """These instances stopped their heartbeat: their sessions are gone."""
        ...


class Following(Protocol):
    """A live subscription to one recorded stream; :meth:`close` ends it."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class RedisPlace:
    """A Redis client, the key prefix a fleet's state lives under, and what seals what is kept
    there (the fleet key's AEAD: task records are sealed as the backplane's messages are)."""

    client: Any
    prefix: str
    sealer: Sealer | None = None


class Backplane:
    """What the instances of a fleet share (see the module docstring).

    The base class is the in-process behaviour (nothing shared, nothing to do); an
    implementation for a fleet overrides every method and sets ``shared``.
    """

    #: False: a single process; transports skip every fleet path (no cost on a request's path).
    shared: bool = False
    #: This instance's name in the registry.
    instance_id: str = "local"

    _inbox: Inbox | None = None
    _on_broadcast: Broadcast | None = None

    def attach(self, inbox: Inbox) -> None:
        """The transport that owns this instance's sessions; it receives forwarded messages."""
        self._inbox = inbox

    def on_broadcast(self, callback: Broadcast) -> None:
        """Who runs a broadcast from another instance here (the server: its local notifications)."""
        self._on_broadcast = callback

    def redis(self) -> RedisPlace | None:
        """The Redis this backplane keeps the fleet's state in, if it has one: a server puts its
        shared stores (tasks, spent rounds) there too, unless it was given its own."""
        return None

    async def start(self) -> None:
        """Connect and start the heartbeat (idempotent)."""

    async def stop(self) -> None:
        """Stop the heartbeat and disconnect; this instance's sessions stop resolving."""

    # -- the registry ----------------------------------------------------------------------

    async def claim(self, session_id: str) -> None:
        """Record that this instance owns ``session_id``."""

    def release(self, session_id: str) -> None:
        """``session_id`` ended here (fire and forget)."""

    async def owner(self, session_id: str) -> str | None:
        """The live instance that owns ``session_id``, or None (unknown, ended, or its owner died)."""
        return None

    # -- messages --------------------------------------------------------------------------

    async def send(self, instance_id: str, message: JSON) -> bool:
        """Deliver ``message`` to ``instance_id``'s inbox; False if that instance is not listening."""
        return False

    async def notify_session(self, session_id: str, message: JSON) -> bool:
        """A server-to-client notification for ``session_id``, wherever its owner is; False: no such session."""
        if self._inbox is not None and await self._inbox.deliver(session_id, message):
            return True
        owner = await self.owner(session_id)
        if owner is None or owner == self.instance_id:
            return False
        return await self.send(owner, {"k": "note", "sid": session_id, "body": message})

    async def broadcast(self, method: str, params: dict[str, Any] | None) -> None:
        """Run ``method`` (a notification to every session) on every other instance."""

    # -- event streams ----------------------------------------------------------------------

    def record(self, session_id: str, key: str, event: Event, reply_to: str | None = None) -> None:
        """Keep ``event`` of stream ``key`` for replay and tell its followers (fire and forget, in order).

        ``reply_to``: the one instance that follows the stream :meth:`directly <follow>` (it
        relays the request): the event goes to that instance alone, not to subscribers.
        """

    async def replay(self, session_id: str, key: str, after: int) -> list[Event] | None:
        """The recorded events of stream ``key`` after seq ``after``; None: nothing recorded."""
        return None

    async def follow(
        self, session_id: str, key: str, on_event: Callable[[Event], None], *, direct: bool = False
    ) -> Following:
        """Call ``on_event`` for each event recorded from now on (until closed).

        ``direct``: the stream's owner is told to send its events to this instance
        (``reply_to``); nothing is subscribed, which makes a relayed request cheaper.
        """
        raise NotImplementedError("an in-process backplane has no other instance to follow")

    # -- page storage (server pages) ------------------------------------------------------------

    _pages: dict[str, tuple[bytes, float]] | None = None

    def _page_book(self) -> dict[str, tuple[bytes, float]]:
        if self._pages is None:
            self._pages = {}
        now = time.monotonic()
        for name in [n for n, (_, until) in self._pages.items() if until <= now]:
            del self._pages[name]
        return self._pages

    def shared_secret(self, label: str) -> bytes | None:
        """A secret every instance of the fleet derives alike (``label`` names its use); None: one process."""
        return None

    async def page_put(self, name: str, value: bytes, ttl: float, *, only_new: bool = False) -> bool:
        """Keep ``value`` under ``name`` for ``ttl`` seconds; ``only_new``: not if ``name`` is taken
        (then False: someone else was first)."""
        book = self._page_book()
        if only_new and name in book:
            return False
        book[name] = (value, time.monotonic() + ttl)
        return True

    async def page_get(self, name: str) -> bytes | None:
        """The value under ``name``, or None (never put, expired, taken, or not sealed by this fleet)."""
        found = self._page_book().get(name)
        return None if found is None else found[0]

    async def page_take(self, name: str) -> bytes | None:
        """The value under ``name``, removed in the same step: of two takers only one gets it."""
        found = self._page_book().pop(name, None)
        return None if found is None else found[0]

    async def page_delete(self, name: str) -> None:
        """Forget ``name``."""
        self._page_book().pop(name, None)

    def watch(self, owner: str) -> None:
        """Check ``owner``'s heartbeat while this instance relays for it (see :meth:`Inbox.owners_gone`)."""

    def unwatch(self, owner: str) -> None:
        """No more relays for ``owner``."""
