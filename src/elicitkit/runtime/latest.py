"""The newest value per key, handed out in the order keys last changed.

Change streams (a client's list changes, a server's task statuses) are level triggers: a reader
needs the latest state of each thing that changed, not every step. Holding one value per key
keeps a slow reader's backlog bounded by the number of things, never by the number of changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Latest"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Latest(Generic[K, V]):
    """One pending value per key; :meth:`take` waits for one, :meth:`end` lets waiters finish."""

    __slots__ = ("_ended", "_error", "_pending", "_wake")

    def __init__(self) -> None:
        self._pending: dict[K, V] = {}
        self._wake = asyncio.Event()
        self._ended = False
        self._error: BaseException | None = None

    def put(self, key: K, value: V) -> None:
        """``value`` replaces what ``key`` had pending and moves to the back (ignored once ended)."""
        if self._ended:
            return
        self._pending.pop(key, None)
        self._pending[key] = value
        self._wake.set()

    def discard(self, key: K) -> None:
        self._pending.pop(key, None)

    def end(self, error: BaseException | None = None) -> None:
        """No more values: what is pending is still taken, then :meth:`take` raises ``error``
        (or ``StopAsyncIteration``). The first end counts."""
        if not self._ended:
            self._ended, self._error = True, error
            self._wake.set()

    @property
    def ended(self) -> bool:
        return self._ended

    def waiting(self) -> list[V]:
        """What is pending, oldest change first (not taken)."""
        return list(self._pending.values())

    def __contains__(self, key: object) -> bool:
        return key in self._pending

    def __len__(self) -> int:
        return len(self._pending)

    async def take(self) -> V:
        """The value whose key changed longest ago; waits for one."""
        while not self._pending:
            if self._ended:
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            self._wake.clear()
            await self._wake.wait()
        key = next(iter(self._pending))
        return self._pending.pop(key)
