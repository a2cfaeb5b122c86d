"""Task changes committed by other instances, carried to this instance's listen streams.

Instances sharing a task store (``RedisTaskStore``) commit changes anywhere: a task created on A
is answered and finished on B. A ``subscriptions/listen`` stream lives on one instance and hears
only its :class:`~elicitkit.server.tasks.events.TaskEvents`, which the local runner feeds. The
relay closes the gap: one background task per instance reads the store's change feed (the id of
every task any instance writes), and for a task some stream here watches it reads the record and
hands it to :meth:`TaskEvents.relay`. Nobody watching: no read.

Exactly once per listening client: the instance that makes a change publishes it locally at once
and sees its id again on the feed; each stream keeps the version it last got per task, so the
second copy (and any older read that lands late) is dropped, and a write that does not change
what the wire shows (a run renewing its lease) is not sent. Several changes in quick succession
may reach a remote stream as one (its newest state), as they do for a slow local stream.

At most once, and then the newest state: pub/sub drops messages sent while the subscription is
down. When Redis is back (redis-py reconnecting by itself, or this relay subscribing again with
backoff), the relay reads every watched task again and sends those that changed meanwhile, so a
stream misses intermediate states at worst, never the state a task ended in. Clients can always
poll ``tasks/get``.

A server whose store has no change feed (in memory, SQLite: one process) starts no relay.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, TypeGuard, runtime_checkable

from elicitkit.server.tasks.events import TaskEvents
from elicitkit.server.tasks.store import TaskRecord, TaskStoreUnavailable

__all__ = ["ChangeFeed", "TaskChangeRelay", "has_change_feed"]

logger = logging.getLogger("elicitkit.tasks")

FIRST_DELAY = 0.1  # seconds before subscribing again after a lost subscription
MAX_DELAY = 5.0  # the backoff doubles up to this


@runtime_checkable
class ChangeFeed(Protocol):
    """A task store shared by several processes, announcing every write (``RedisTaskStore``)."""

    def changes(self, *, subscribed: Callable[[], Awaitable[None]] | None = None) -> AsyncIterator[str]: ...

    async def get(self, task_id: str) -> TaskRecord | None: ...

    @property
    def closed(self) -> bool: ...


def has_change_feed(store: object) -> TypeGuard[ChangeFeed]:
    """Whether ``store`` is shared and announces changes (then the server runs a relay)."""
    return isinstance(store, ChangeFeed)


class TaskChangeRelay:
    """Reads ``store``'s change feed into ``events`` until cancelled (see the module docstring)."""

    def __init__(
        self, store: ChangeFeed, events: TaskEvents, *, first_delay: float = FIRST_DELAY, max_delay: float = MAX_DELAY
    ) -> None:
        self.store = store
        self.events = events
        self.first_delay = first_delay
        self.max_delay = max_delay
        self.subscribed = asyncio.Event()  # set while Redis confirms the subscription
        self.tried = asyncio.Event()  # set once the first attempt subscribed or failed
        self.subscriptions = 0  # how many times the subscription was confirmed (for tests, metrics)
        self._delay = first_delay
        self._outage_logged = False

    async def run(self) -> None:
        """Relay until cancelled (or the store is closed), subscribing again with backoff whenever
        the feed is lost; an outage is logged once, and the recovery once."""
        while True:
            try:
                async for task_id in self.store.changes(subscribed=self._on_subscribed):
                    await self._relay_one(task_id)
            except TaskStoreUnavailable as exc:
                if not self._outage_logged:
                    logger.warning("task change relay lost the store (%s); subscribing again", exc.reason)
                    self._outage_logged = True
            except Exception:
                if self.store.closed:
                    logger.info("task change relay stopped: the task store is closed")
                    return
                logger.exception("task change relay failed; subscribing again")
            self.subscribed.clear()
            self.tried.set()
            delay, self._delay = self._delay, min(self._delay * 2, self.max_delay)
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))  # jitter: instances do not retry in step

    async def _on_subscribed(self) -> None:
        """Redis confirmed the subscription: reset the backoff and catch up on watched tasks."""
        again = self.subscriptions > 0
        self.subscriptions += 1
        self._delay = self.first_delay
        if self._outage_logged:
            logger.info("task change relay subscribed again")
            self._outage_logged = False
        self.subscribed.set()
        self.tried.set()
        if again:  # changes made while it was away were not announced to it: read them
            for task_id in self.events.watched():
                await self._relay_one(task_id)

    async def _relay_one(self, task_id: str) -> None:
        if not self.events.watching(task_id):
            return  # no stream here watches it: no read
        try:
            record = await self.store.get(task_id)
        except TaskStoreUnavailable:
            return  # the feed fails too; the catch-up after it is back reads it again
        if record is not None:  # deleted (expired): nothing to tell, as for a local deletion
            self.events.relay(record)
