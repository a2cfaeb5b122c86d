"""Task changes fanned out to the ``subscriptions/listen`` streams of this process.

``TaskRunner(on_change=events.publish)`` reports every committed change; a listen stream that
asked for some task ids iterates ``events.subscribe(ids)`` and sends each view as a
``notifications/tasks``. Every notification carries the task's whole state, so a slow stream
never needs the states it missed: per task only the newest one waits, and memory per stream is
bounded by the number of ids it watches. Changes committed by another process reach only that
process's streams (the fleet backplane carries them further); clients can always poll.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from types import TracebackType

from elicitkit.protocol.tasks import TaskView
from elicitkit.server.tasks.store import TaskRecord

__all__ = ["TaskEvents", "TaskSubscription"]


class TaskSubscription(AsyncIterator[TaskView]):
    """The changes of some tasks, newest state per task, in the order they last changed."""

    def __init__(self, events: TaskEvents, task_ids: frozenset[str]) -> None:
        self.task_ids = task_ids
        self._events = events
        self._pending: dict[str, TaskView] = {}
        self._wake = asyncio.Event()
        self._closed = False

    def _offer(self, view: TaskView) -> None:
        self._pending.pop(view.task_id, None)  # re-insert: order by the latest change
        self._pending[view.task_id] = view
        self._wake.set()

    def __aiter__(self) -> TaskSubscription:
        return self

    async def __anext__(self) -> TaskView:
        while not self._pending:
            if self._closed:
                raise StopAsyncIteration
            self._wake.clear()
            await self._wake.wait()
        task_id = next(iter(self._pending))
        return self._pending.pop(task_id)

    def close(self) -> None:
        """Stop receiving; an iteration in progress ends once what is pending is taken."""
        if not self._closed:
            self._closed = True
            self._events._drop(self)
            self._wake.set()

    async def __aenter__(self) -> TaskSubscription:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class TaskEvents:
    """Who listens to which task, in this process; ``publish`` is the runner's ``on_change``."""

    def __init__(self) -> None:
        self._by_task: dict[str, set[TaskSubscription]] = {}

    def subscribe(self, task_ids: Iterable[str]) -> TaskSubscription:
        """Start receiving changes of these tasks (ids the caller may see: the stream checks that)."""
        subscription = TaskSubscription(self, frozenset(task_ids))
        for task_id in subscription.task_ids:
            self._by_task.setdefault(task_id, set()).add(subscription)
        return subscription

    def publish(self, record: TaskRecord) -> None:
        """Hand a committed change to every stream watching its task (no-op when none is)."""
        watchers = self._by_task.get(record.task_id)
        if not watchers:
            return
        view = record.view()
        for subscription in watchers:
            subscription._offer(view)

    def watching(self, task_id: str) -> int:
        """How many streams watch a task (for tests and metrics)."""
        return len(self._by_task.get(task_id, ()))

    def _drop(self, subscription: TaskSubscription) -> None:
        for task_id in subscription.task_ids:
            watchers = self._by_task.get(task_id)
            if watchers is not None:
                watchers.discard(subscription)
                if not watchers:
                    del self._by_task[task_id]
