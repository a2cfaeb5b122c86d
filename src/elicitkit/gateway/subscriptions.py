"""Hosts' subscriptions, forwarded to the backend that owns the URI, once per URI.

A host subscribes with ``resources/subscribe`` (2025: its session holds the subscription) or a
``subscriptions/listen`` stream naming ``resourceSubscriptions`` (2026: the stream holds them
while it is open). Many hosts may subscribe to one URI; the backend hears one
``resources/subscribe`` when the first does and one ``resources/unsubscribe`` when the last
leaves (a host session that went away without unsubscribing is dropped the next time that URI's
subscribers change, or when an update finds none of them left). A backend's subscriptions live
on a connection the gateway holds for them alone (a subscription belongs to a session), which
is where its updates arrive; the gateway passes each to the hosts subscribed to that URI (the
server's own fan-out, to sessions and listen streams).

A 2026 backend sends nothing unasked: the gateway holds a ``subscriptions/listen`` stream open to
it (``Client.listen``) for its list changes and the URIs hosts want. The filter of a stream is
fixed, so a new set of URIs opens a new stream before the old one is closed (no change is missed
in between).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskStatus

from elicitkit.protocol.errors import METHOD_NOT_FOUND, MCPError

if TYPE_CHECKING:
    from elicitkit.gateway.backend import Backend, Lease
    from elicitkit.gateway.gateway import Gateway

__all__ = ["Subscriptions"]

logger = logging.getLogger("elicitkit.gateway")


class Subscriptions:
    """Which host sessions want which URIs, and what each backend was asked to send."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.holders: dict[str, dict[object, Callable[[], bool]]] = {}  # uri -> holder -> still there?
        self.at_backend: dict[str, str] = {}  # uri -> the backend subscribed to it for us
        self.leases: dict[str, Lease] = {}  # backend -> the connection its subscriptions live on
        self.watches: dict[str, _Watch] = {}  # 2026 backend -> its open listen stream
        self._lock = anyio.Lock()

    def _live(self, uri: str) -> dict[object, Callable[[], bool]]:
        holders = self.holders.setdefault(uri, {})
        for holder, alive in list(holders.items()):
            if not alive():
                del holders[holder]
        return holders

    async def add(self, holder: object, uri: str, alive: Callable[[], bool]) -> None:
        """``holder`` (a host session, a listen stream) subscribed to ``uri``: the owning backend
        is asked, if it is the first; ``alive`` says whether the holder still wants it."""
        entry = self.gateway.catalogue.owner_of_uri(uri)
        async with self._lock:
            holders = self._live(uri)
            holders[holder] = alive
            if entry is None or uri in self.at_backend or entry.backend in self.gateway.accounts.names:
                return  # no backend has it (updates may still come unasked), it is asked already, or
                # the backend takes each person's token (no connection of the gateway's own to hold)
            backend = self.gateway.backends[entry.backend]
            try:
                asked = await self._request(backend, "resources/subscribe", uri)
            except BaseException:
                holders.pop(holder, None)
                self._release_if_idle(backend)
                raise
            if asked:
                self.at_backend[uri] = backend.name
            else:
                self._release_if_idle(backend)

    async def remove(self, holder: object, uri: str) -> None:
        """``holder`` left ``uri``: the backend is told when nobody else wants it."""
        async with self._lock:
            self._live(uri).pop(holder, None)
            await self._drop_if_unwanted(uri)

    async def updated(self, uri: str) -> None:
        """An update came: a URI nobody wants any more is unsubscribed at its backend."""
        if uri in self.at_backend and not self._live(uri):
            async with self._lock:
                await self._drop_if_unwanted(uri)

    async def _drop_if_unwanted(self, uri: str) -> None:
        if self.holders.get(uri):
            return
        self.holders.pop(uri, None)
        name = self.at_backend.pop(uri, None)
        if name is None:
            return
        backend = self.gateway.backends[name]
        try:
            await self._request(backend, "resources/unsubscribe", uri)
        except MCPError as exc:
            logger.info("backend %s: unsubscribing %s failed: %s", name, uri, exc.message)
        self._release_if_idle(backend)

    def _release_if_idle(self, backend: Backend) -> None:
        """The subscription connection goes back once the backend holds none of ours."""
        if backend.name not in self.at_backend.values() and backend.name not in self.watches:
            lease = self.leases.pop(backend.name, None)
            if lease is not None:
                backend.release(lease)

    async def _lease(self, backend: Backend) -> Lease:
        lease = self.leases.get(backend.name)
        if lease is None or not lease.alive:
            if lease is not None:  # it died (a restarted backend forgot our subscriptions)
                backend.release(lease)
                for gone in [u for u, b in self.at_backend.items() if b == backend.name]:
                    del self.at_backend[gone]
                self.watches.pop(backend.name, None)
            lease = await backend.lease()
            self.leases[backend.name] = lease
        return lease

    async def watch(self, backend: Backend) -> None:
        """Hold a listen stream open to a 2026 backend (its list changes reach hosts); nothing for
        a 2025 backend, which sends them unasked, nor for one each person signs in to. A backend
        that cannot be reached now is watched after its next listing."""
        if backend.name in self.gateway.accounts.names:
            return
        try:
            await self._watch(backend)
        except MCPError as exc:
            logger.info("backend %s: cannot follow its changes now: %s", backend.name, exc.message)

    async def _watch(self, backend: Backend) -> None:
        async with self._lock:
            watching = self.watches.get(backend.name)
            if watching is not None and watching.open and self.leases[backend.name].alive:
                return
            lease = await self._lease(backend)
            if lease.client.connection.changes_come_on_streams:
                await self._rewatch(backend, lease)
            else:
                self._release_if_idle(backend)

    async def _rewatch(self, backend: Backend, lease: Lease) -> None:
        """(Re)open the backend's stream with the URIs wanted now; the old one closes after."""
        uris = tuple(sorted(u for u, b in self.at_backend.items() if b == backend.name))
        old = self.watches.get(backend.name)
        new = _Watch(lease, uris)
        self.watches[backend.name] = new
        await self.gateway._group().start(new.hold, backend.name)
        if old is not None:
            old.close()
        if not new.open:  # the backend has no listen (or refused it): nothing to hold
            self.watches.pop(backend.name, None)

    async def _request(self, backend: Backend, method: str, uri: str) -> bool:
        """``method`` on the backend's subscription connection; False when it has no such method."""
        lease = await self._lease(backend)
        if lease.client.connection.changes_come_on_streams:  # the URI goes into the backend's listen stream
            subscribing = method == "resources/subscribe"
            if subscribing:
                self.at_backend[uri] = backend.name
            else:
                self.at_backend.pop(uri, None)
            await self._rewatch(backend, lease)
            if subscribing:
                watching = self.watches.get(backend.name)
                self.at_backend.pop(uri, None)  # (the caller records it on success)
                return watching is not None and uri in watching.agreed
            return True
        try:
            await lease.client.request(method, {"uri": uri})
        except MCPError as exc:
            if exc.code == METHOD_NOT_FOUND:
                logger.info("backend %s has no %s: %s not forwarded", backend.name, method, uri)
                return False
            raise backend.named(exc) from None
        return True

    async def aclose(self) -> None:
        for watching in self.watches.values():
            watching.close()
        self.watches.clear()
        for name, lease in self.leases.items():
            self.gateway.backends[name].release(lease)
        self.leases.clear()
        self.at_backend.clear()
        self.holders.clear()


class _Watch:
    """One listen stream held open to a 2026 backend until :meth:`close` (or the backend goes)."""

    def __init__(self, lease: Lease, uris: tuple[str, ...]) -> None:
        self.lease = lease
        self.uris = uris
        self.agreed: tuple[str, ...] = ()
        self.open = False
        self._stop = anyio.Event()

    def close(self) -> None:
        self._stop.set()

    async def hold(self, name: str, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        started = False
        try:
            listening = self.lease.client.listen(tools=True, prompts=True, resources=True, resource_uris=self.uris)
            async with listening as changes, anyio.create_task_group() as group:
                self.agreed = changes.agreed.resource_subscriptions
                self.open = started = True
                task_status.started()

                async def closed() -> None:
                    await self._stop.wait()
                    group.cancel_scope.cancel()

                group.start_soon(closed)
                async for _ in changes:  # (each change reached the gateway as a notification already)
                    pass
                group.cancel_scope.cancel()  # the backend ended the stream
        except MCPError as exc:
            logger.info("backend %s: its listen stream ended: %s", name, exc.message)
        finally:
            self.open = False
            if not started:
                task_status.started()
