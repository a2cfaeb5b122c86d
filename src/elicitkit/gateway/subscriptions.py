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
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from elicitkit.protocol.errors import METHOD_NOT_FOUND, MCPError
from elicitkit.protocol.versions import Era

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
        if backend.name not in self.at_backend.values():
            lease = self.leases.pop(backend.name, None)
            if lease is not None:
                backend.release(lease)

    async def _request(self, backend: Backend, method: str, uri: str) -> bool:
        """``method`` on the backend's subscription connection; False when it has no such method."""
        lease = self.leases.get(backend.name)
        if lease is None or not lease.alive:
            if lease is not None:  # it died (a restarted backend forgot our subscriptions)
                backend.release(lease)
                for gone in [u for u, b in self.at_backend.items() if b == backend.name]:
                    del self.at_backend[gone]
            lease = await backend.lease()
            self.leases[backend.name] = lease
        if lease.client.era is Era.MODERN:
            logger.info("backend %s speaks 2026-07-28 (no resources/subscribe): %s not forwarded", backend.name, uri)
            return False
        try:
            await lease.client.request(method, {"uri": uri})
        except MCPError as exc:
            if exc.code == METHOD_NOT_FOUND:
                logger.info("backend %s has no %s: %s not forwarded", backend.name, method, uri)
                return False
            raise backend.named(exc) from None
        return True

    async def aclose(self) -> None:
        for name, lease in self.leases.items():
            self.gateway.backends[name].release(lease)
        self.leases.clear()
        self.at_backend.clear()
        self.holders.clear()
