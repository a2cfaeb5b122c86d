"""A server's connections: its providers, the store, the vault, and the token for a principal.

``Connections`` is what ``ctx.authorize`` asks (:mod:`.asking`), what the start and callback
pages drive (:mod:`.web`), and the API behind ``elicitkit connections``: list and revoke per
principal. Tokens are refreshed before they expire, with a compare-and-set so two instances
refreshing at once keep one result; a refresh the provider refuses forgets the connection
(the person is asked again next time).
"""

from __future__ import annotations

import json
import logging
import secrets
import sys
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from elicitkit.auth.errors import RefreshRefused, TokenEndpointError
from elicitkit.auth.http import Fetcher
from elicitkit.auth.tokens import TokenSet
from elicitkit.server.auth.connections import links, oauth
from elicitkit.server.auth.connections.flows import DONE, FAILED, Flow, flow_from_json, flow_to_json
from elicitkit.server.auth.connections.providers import Endpoints, Provider
from elicitkit.server.auth.connections.store import ConnectionStore, MemoryConnectionStore, Row
from elicitkit.server.auth.connections.vault import Vault
from elicitkit.server.rounds.keys import KeyRing

if TYPE_CHECKING:
    from elicitkit.runtime.contract import ASGIApp
    from elicitkit.server.auth.connections.web import ConnectPages
    from elicitkit.server.lowlevel import LowLevelServer
    from elicitkit.server.server import Server

__all__ = ["Connection", "Connections", "connections_of"]

logger = logging.getLogger("elicitkit.connections")

POLL = 0.25  # seconds between looks at a flow another instance may finish
JUST_REFRESHED = 5.0  # seconds a token someone else just refreshed must still have, to be used as it is


@dataclass(frozen=True)
class Connection:
    """What may be shown of a connection: never a token."""

    principal: str
    provider: str
    scope: str | None
    expires_at: float | None
    renews: bool
    updated_at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "principal": self.principal,
            "provider": self.provider,
            "scope": self.scope,
            "expires_at": self.expires_at,
            "renews": self.renews,
            "updated_at": self.updated_at,
        }


def described(row: Row) -> Connection:
    meta = row.meta
    expires = meta.get("expires_at")
    scope = meta.get("scope")
    return Connection(
        row.principal,
        row.provider,
        scope if isinstance(scope, str) else None,
        float(expires) if isinstance(expires, (int, float)) else None,
        bool(meta.get("renews")),
        float(meta.get("updated_at", 0.0)),
    )


class Connections:
    """Third-party sign-in for one server (``Server(connections=...)`` or ``server.connections = ...``).

    ``providers``: the :class:`Provider` s tools may ``ctx.authorize``. ``sign_in``: the
    server's own issuer as an OpenID provider (usually the resource server's authorization
    server, with a client registered for this server): the start page has the browser's user
    sign in there and refuses anyone but the principal the link was made for. Without it, the
    short-lived single-use link bound to the principal is the only proof. ``store``: default
    beside the task store (its SQLite file; a fleet's Redis). ``keys``: the ring that seals
    tokens at rest; default the server's state keys (``ELICITKIT_STATE_KEYS``).
    ``link_ttl``: seconds a start link may wait to be opened; ``flow_ttl``: seconds the whole
    sign-in may take.
    """

    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        sign_in: Provider | None = None,
        store: ConnectionStore | None = None,
        keys: KeyRing | None = None,
        link_ttl: float = 300.0,
        flow_ttl: float = 900.0,
    ) -> None:
        self.providers = {p.name: p for p in providers}
        if len(self.providers) != len(providers):
            raise ValueError("two providers share a name")
        self.sign_in = sign_in
        self._store = store
        self._keys = keys
        self.link_ttl = link_ttl
        self.flow_ttl = flow_ttl
        self._server: weakref.ref[Server] | None = None
        self._endpoints: dict[str, Endpoints] = {}
        self._vault: Vault | None = None
        self._links: Vault | None = None
        self._flows: Vault | None = None
        self._events: dict[str, anyio.Event] = {}
        self._refreshing: dict[tuple[str, str], anyio.Lock] = {}
        self._pages: ConnectPages | None = None

    # -- wiring ------------------------------------------------------------------------

    def bind(self, server: LowLevelServer) -> None:
        from elicitkit.server.server import Server

        if not isinstance(server, Server):
            raise TypeError("third-party sign-in needs an elicitkit Server (it keeps tokens beside its tasks)")
        self._server = weakref.ref(server)

    def serve(self, server: LowLevelServer, pages_app: ASGIApp) -> ASGIApp:
        """The server's question pages with the connect pages beside them (called when HTTP
        serving mounts the pages: the start page and the callback live there)."""
        from elicitkit.server.auth.connections.web import ConnectPages, mount
        from elicitkit.server.pages import pages_of

        self.bind(server)
        info = server.server_info
        self._pages = ConnectPages(self, pages_of(server), str(info.get("title") or info.get("name") or "This server"))
        return mount(pages_app, self._pages)

    @property
    def pages_for_server(self) -> ConnectPages | None:
        """The connect pages, once HTTP serving mounted them."""
        return self._pages

    def pages_for(self, server: LowLevelServer) -> ConnectPages | None:
        """The connect pages, once HTTP serving mounted them (None: stdio, in-memory)."""
        self.bind(server)
        return self._pages

    @property
    def server(self) -> Server:
        server = self._server() if self._server is not None else None
        if server is None:
            raise RuntimeError("these connections belong to no server; set server.connections = Connections(...)")
        return server

    @property
    def store(self) -> ConnectionStore:
        if self._store is None:
            self._store = _store_beside_tasks(self.server)
        return self._store

    def _ring(self) -> KeyRing:
        if self._keys is None:
            from elicitkit.server.rounds.sealing import AeadStateCodec

            codec = self.server.state_codec if self._server is not None else None
            if isinstance(codec, AeadStateCodec):
                self._keys = codec.keyring
            else:
                logger.warning("no key ring to seal connection tokens with: a fresh one (lost on restart)")
                self._keys = KeyRing.generate()
        return self._keys

    def _vaults(self) -> tuple[Vault, Vault, Vault]:
        if self._vault is None or self._links is None or self._flows is None:
            ring = self._ring()
            self._vault, self._links, self._flows = Vault(ring, b"tokens"), Vault(ring, b"links"), Vault(ring, b"flows")
        return self._vault, self._links, self._flows

    def provider(self, name: str) -> Provider:
        found = self.providers.get(name)
        if found is None:
            known = ", ".join(sorted(self.providers)) or "none"
            raise ValueError(f"no provider named {name!r} is configured (configured: {known})")
        return found

    async def endpoints(self, provider: Provider) -> Endpoints:
        known = self._endpoints.get(provider.name)
        if known is None:
            async with Fetcher(provider.timeout) as http:
                known = self._endpoints[provider.name] = await provider.endpoints(http)
        return known

    # -- tokens --------------------------------------------------------------------------

    @staticmethod
    def _where(principal: str, provider: str) -> bytes:
        return b"token\0" + principal.encode() + b"\0" + provider.encode()

    def _open(self, row: Row) -> TokenSet | None:
        vault = self._vaults()[0]
        body = vault.open(self._where(row.principal, row.provider), row.sealed)
        if body is None:
            logger.warning("a stored %s connection does not open under the key ring (keys changed?)", row.provider)
            return None
        try:
            return TokenSet.from_json(json.loads(body))
        except ValueError:
            return None

    async def save(self, principal: str, provider: str, tokens: TokenSet, *, expected: bytes | None = None) -> bool:
        """Keep ``tokens`` (sealed) for ``principal`` at ``provider``."""
        body = json.dumps(tokens.to_json()).encode()
        sealed = self._vaults()[0].seal(self._where(principal, provider), body)
        meta = {
            "scope": tokens.scope,
            "expires_at": tokens.expires_at,
            "renews": tokens.refresh_token is not None,
            "updated_at": time.time(),
        }
        return await self.store.put(Row(principal, provider, sealed, meta), expected=expected)

    async def token(self, principal: str, name: str) -> TokenSet | None:
        """A valid token of ``principal`` at provider ``name`` (refreshed when near its end), or None."""
        provider = self.provider(name)
        row = await self.store.get(principal, name)
        tokens = self._open(row) if row is not None else None
        if row is None or tokens is None:
            return None
        if not tokens.expired(provider.refresh_leeway):
            return tokens
        if tokens.refresh_token is None:
            return None  # ran out and cannot renew: ask the person again
        lock = self._refreshing.setdefault((principal, name), anyio.Lock())
        async with lock:  # one refresh per connection in this process; the store's CAS across the fleet
            return await self._refresh(principal, provider, row, tokens)

    async def _refresh(self, principal: str, provider: Provider, row: Row, tokens: TokenSet) -> TokenSet | None:
        latest = await self.store.get(principal, provider.name)
        if latest is None:
            return None
        if latest.sealed != row.sealed:  # refreshed meanwhile (here or elsewhere): use that one while it
            fresh = self._open(latest)  # lasts, even if the provider's tokens live less than the leeway
            if fresh is not None and not fresh.expired(min(provider.refresh_leeway, JUST_REFRESHED)):
                return fresh
            row, tokens = latest, fresh or tokens
        try:
            renewed = await oauth.refresh(provider, await self.endpoints(provider), tokens)
        except RefreshRefused as exc:
            logger.info("%s refused to refresh a connection; the person will be asked again: %s", provider.name, exc)
            await self.store.delete(principal, provider.name)
            return None
        except TokenEndpointError as exc:
            logger.warning("could not refresh a %s connection: %s", provider.name, exc)
            raise
        if await self.save(principal, provider.name, renewed, expected=row.sealed):
            logger.info("refreshed a %s connection", provider.name)
            return renewed
        again = await self.store.get(principal, provider.name)  # another instance won the race: theirs
        return self._open(again) if again is not None else None

    async def list(self, principal: str | None = None) -> list[Connection]:
        """The connections (of ``principal``): what they grant and until when, never a token."""
        return [described(row) for row in await self.store.rows(principal)]

    async def revoke(self, principal: str, name: str) -> bool:
        """Forget ``principal``'s tokens at provider ``name`` (True if there were some)."""
        return await self.store.delete(principal, name)

    # -- flows ---------------------------------------------------------------------------

    async def load_flow(self, flow_id: str) -> tuple[Flow, bytes] | None:
        sealed = await self.store.flow_get(flow_id)
        if sealed is None:
            return None
        body = self._vaults()[2].open(b"flow\0" + flow_id.encode(), sealed)
        flow = flow_from_json(body) if body is not None else None
        return None if flow is None or flow.flow_id != flow_id else (flow, sealed)

    async def save_flow(self, flow: Flow, expected: bytes | None) -> bool:
        sealed = self._vaults()[2].seal(b"flow\0" + flow.flow_id.encode(), flow_to_json(flow))
        done = await self.store.flow_put(flow.flow_id, sealed, flow.expires_at, expected=expected)
        if done and flow.finished:
            event = self._events.pop(flow.flow_id, None)
            if event is not None:
                event.set()
        return done

    async def start(
        self, principal: str, name: str, link_base: str, flow_id: str | None, session_id: str | None
    ) -> Flow:
        """The sign-in for this call: the one ``flow_id`` names (a 2026 call's later rounds), else new."""
        self.provider(name)
        if flow_id is not None:
            found = await self.load_flow(flow_id)
            if found is not None and found[0].principal == principal and found[0].provider == name:
                return found[0]
        flow_id = flow_id or secrets.token_urlsafe(18)
        now = time.time()
        link = link_base + "?link=" + self.link_token(flow_id, principal, name, now + self.link_ttl)
        flow = Flow(flow_id, principal, name, link, now + self.flow_ttl, session_id=session_id)
        if not await self.save_flow(flow, None):
            found = await self.load_flow(flow_id)
            if found is None or found[0].principal != principal:
                raise RuntimeError("a sign-in flow id was taken twice")  # 144 random bits: never in practice
            return found[0]
        return flow

    def link_token(self, flow_id: str, principal: str, provider: str, expires_at: float) -> str:
        return links.seal_link(self._vaults()[1], links.Link(flow_id, principal, provider, expires_at))

    def open_link(self, token: str) -> links.Link | None:
        """A start link, if this server made it (any key of the ring) and it is whole."""
        return links.open_link(self._vaults()[1], token)

    async def wait(self, flow_id: str, timeout: float) -> Flow | None:
        """The flow once it ends (done or failed), or None after ``timeout`` seconds or when it expired."""
        event = self._events.setdefault(flow_id, anyio.Event())
        try:
            with anyio.move_on_after(timeout):
                while True:
                    found = await self.load_flow(flow_id)
                    if found is None:
                        return None
                    if found[0].finished:
                        return found[0]
                    with anyio.move_on_after(POLL):  # woken at once here; another instance's finish: polled
                        await event.wait()
            return None
        finally:
            if self._events.get(flow_id) is event:  # finished elsewhere, or given up: nothing to wake
                del self._events[flow_id]

    async def fail(self, flow: Flow, sealed: bytes, reason: str) -> None:
        await self.save_flow(flow.step(status=FAILED, reason=reason), sealed)

    async def finish(self, flow: Flow, sealed: bytes, tokens: TokenSet) -> bool:
        """Keep the tokens and end the flow; tell a 2025 session that was sent away (-32042)."""
        await self.save(flow.principal, flow.provider, tokens)
        done = await self.save_flow(flow.step(status=DONE), sealed)
        if done and flow.session_id is not None and self._server is not None:
            try:
                await self.server.notify_elicitation_complete(flow.session_id, flow.flow_id)
            except Exception as exc:  # the person is connected either way
                logger.info("could not tell the session its sign-in is done: %s", exc)
        return done


def _store_beside_tasks(server: Server) -> ConnectionStore:
    """The task store's place: its SQLite file, a fleet's Redis, else memory."""
    from elicitkit.server.tasks.store import SQLiteTaskStore

    tasks = server.tasks.store
    if isinstance(tasks, SQLiteTaskStore):
        from elicitkit.server.auth.connections.sqlite_store import SQLiteConnectionStore

        return SQLiteConnectionStore(tasks.path)
    redis_module = sys.modules.get("elicitkit.server.tasks.redis_store")  # loaded if a fleet made its store
    if redis_module is not None and isinstance(tasks, redis_module.RedisTaskStore):
        from elicitkit.server.auth.connections.redis_store import RedisConnectionStore

        return RedisConnectionStore(tasks.client, prefix=tasks.prefix)
    return MemoryConnectionStore()


def connections_of(server: Server) -> Connections:
    found = server.connections
    if found is None:
        raise ValueError("ctx.authorize needs providers: server.connections = Connections([Provider(...)])")
    return found
