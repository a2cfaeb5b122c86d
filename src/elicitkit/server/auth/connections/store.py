"""Where connections and sign-ins in progress are kept: the protocol, and the in-memory store.

A store holds bytes it cannot read: each connection's tokens are sealed by
:class:`~elicitkit.server.auth.connections.vault.Vault` before they get here, next to a little
metadata in clear (scopes, expiry, whether it renews) that listing and revoking need without
the keys. Every write that must not lose a race is a compare-and-set on the sealed bytes
(each seal is unique: a fresh nonce), so two instances refreshing one token, or two browsers
opening one start link, cannot both win.

The stores: :class:`MemoryConnectionStore` (one process), :class:`~.sqlite_store.SQLiteConnectionStore`
(beside the tasks, in the task store's SQLite file), :class:`~.redis_store.RedisConnectionStore`
(a fleet's Redis, beside its tasks).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["ConnectionStore", "MemoryConnectionStore", "Row"]


@dataclass(frozen=True)
class Row:
    """One connection as kept: whose, at which provider, the sealed tokens, and clear metadata."""

    principal: str
    provider: str
    sealed: bytes = field(repr=False)
    meta: dict[str, Any] = field(default_factory=dict)


class ConnectionStore(Protocol):
    """Connections by principal and provider, and sign-in flows by id (sealed bytes, with expiry)."""

    async def get(self, principal: str, provider: str) -> Row | None: ...

    async def put(self, row: Row, *, expected: bytes | None = None) -> bool:
        """Write ``row``; with ``expected``, only if the stored sealed bytes are still those."""
        ...

    async def delete(self, principal: str, provider: str) -> bool: ...

    async def rows(self, principal: str | None = None) -> list[Row]:
        """Every connection (of ``principal``, when given), sorted by principal and provider."""
        ...

    async def flow_get(self, flow_id: str) -> bytes | None: ...

    async def flow_put(self, flow_id: str, sealed: bytes, expires_at: float, *, expected: bytes | None = None) -> bool:
        """Create the flow (``expected`` None: only if there is none) or replace it (compare-and-set)."""
        ...

    async def close(self) -> None: ...


class MemoryConnectionStore:
    """This process only (a server with an in-memory task store, and tests)."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], Row] = {}
        self._flows: dict[str, tuple[bytes, float]] = {}

    async def get(self, principal: str, provider: str) -> Row | None:
        return self._rows.get((principal, provider))

    async def put(self, row: Row, *, expected: bytes | None = None) -> bool:
        key = (row.principal, row.provider)
        if expected is not None:
            held = self._rows.get(key)
            if held is None or held.sealed != expected:
                return False
        self._rows[key] = row
        return True

    async def delete(self, principal: str, provider: str) -> bool:
        return self._rows.pop((principal, provider), None) is not None

    async def rows(self, principal: str | None = None) -> list[Row]:
        return [r for k, r in sorted(self._rows.items()) if principal is None or k[0] == principal]

    async def flow_get(self, flow_id: str) -> bytes | None:
        held = self._flows.get(flow_id)
        if held is None or held[1] < time.time():
            return None
        return held[0]

    async def flow_put(self, flow_id: str, sealed: bytes, expires_at: float, *, expected: bytes | None = None) -> bool:
        current = await self.flow_get(flow_id)
        if (expected is None and current is not None) or (expected is not None and current != expected):
            return False
        self._flows[flow_id] = (sealed, expires_at)
        now = time.time()
        for stale in [k for k, (_, until) in self._flows.items() if until < now]:
            del self._flows[stale]
        return True

    async def close(self) -> None:
        return None
