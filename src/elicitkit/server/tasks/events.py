"""Task changes fanned out to the ``subscriptions/listen`` streams of this process.

``TaskRunner(on_change=events.publish)`` reports every committed change; a listen stream that
asked for some task ids iterates ``events.subscribe(ids)`` and sends each view as a
``notifications/tasks``. Every notification carries the task's whole state, so a slow stream
never needs the states it missed: per task only the newest one waits, and memory per stream is
bounded by the number of ids it watches.

Changes committed by another process sharing the store reach this one through
:class:`~elicitkit.server.tasks.relay.TaskChangeRelay`, which hands them to :meth:`TaskEvents.relay`.
Each stream remembers, per task, the version (and view) it last got, so a change reaches a stream
once even when it arrives twice (committed here, then relayed back from the store's channel) or out
of order (a relayed read older than a local commit), and a write no client can see (a run renewing
its lease elsewhere) is not sent at all. A listen stream subscribes before it reads the records
it starts from; a record relayed in between is judged against that read, and by its
``updated_at`` (which a renewal leaves as it was): a change made since the subscription is sent.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from types import TracebackType

from elicitkit.protocol.tasks import TaskView
from elicitkit.runtime.latest import Latest
from elicitkit.server.tasks.store import TaskRecord

__all__ = ["TaskEvents", "TaskSubscription"]


class TaskSubscription(AsyncIterator[TaskView]):
    """The changes of some tasks, newest state per task, in the order they last changed."""

    def __init__(self, events: TaskEvents, task_ids: frozenset[str], *, since: float | None = None) -> None:
        self.task_ids = task_ids
        self._events = events
        self._latest: Latest[str, TaskView] = Latest()
        # per task, the newest record version (revision) this stream got (or started from) and its view: what makes
        # a change arriving twice, late, or invisible on the wire reach the client at most once
        self._seen: dict[str, tuple[int, TaskView]] = {}
        # relayed records that came before the stream knew where it starts (before ``_start_from``): whether
        # they show anything new cannot be told yet (a lease renewal elsewhere looks like a change)
        self._unplaced: dict[str, tuple[int, TaskView]] = {}
        self._placed = since is None
        # when the stream subscribed, on the runner's clock, if its caller reads where it starts only now: a
        # record read whose wire state changed at or after it (``updated_at``; a lease renewal leaves that) is news
        self._since = since

    def _offer(self, revision: int, view: TaskView, *, relayed: bool) -> None:
        if revision:  # 0: a record no store versioned (tests): always offered
            seen = self._seen.get(view.task_id)
            if relayed and seen is None and not self._placed:
                held = self._unplaced.get(view.task_id)
                if held is None or revision > held[0]:
                    self._unplaced[view.task_id] = (revision, view)
                return
            if seen is not None:
                if revision <= seen[0]:
                    return  # had it (from this process, or from the relay) or newer already
                if relayed and view == seen[1]:
                    self._seen[view.task_id] = (revision, view)
                    return  # a write the wire does not show (another instance renewing its lease)
            self._seen[view.task_id] = (revision, view)
        self._latest.put(view.task_id, view)  # ordered by the latest change

    def __aiter__(self) -> TaskSubscription:
        return self

    async def __anext__(self) -> TaskView:
        return await self._latest.take()

    def waiting(self) -> list[TaskView]:
        """The changes not taken yet, oldest first."""
        return self._latest.waiting()

    def narrow(self, task_ids: Iterable[str], *, current: Mapping[str, TaskRecord] | None = None) -> None:
        """Watch only those of ``task_ids`` watched already, from the records in ``current`` on.

        For a stream that subscribes to every id asked for before it reads which the caller may
        see: what is committed while it reads is not lost, and the others are dropped.
        """
        keep = self.task_ids.intersection(task_ids)
        gone = self.task_ids - keep
        self._events._drop(self, gone)
        self.task_ids = keep
        for task_id in gone:
            self._latest.discard(task_id)
            self._seen.pop(task_id, None)
        self._start_from(current or {})

    def _start_from(self, current: Mapping[str, TaskRecord]) -> None:
        self._placed = True
        unplaced, self._unplaced = self._unplaced, {}
        for task_id in self.task_ids:
            record = current.get(task_id)
            if record is not None and record.version:
                if task_id in self._seen:  # a local change came in meanwhile: the record read is as new or newer
                    self._offer(record.version, record.view(), relayed=True)
                else:
                    self._seen[task_id] = (record.version, record.view())
        for task_id, held in unplaced.items():  # relayed while the caller read, in the order they came
            if task_id in self.task_ids:  # sent if newer than the read and shown differently
                self._offer(*held, relayed=True)
        if self._since is None:
            return
        for task_id in self.task_ids:  # the read shows a change made after this stream subscribed: news
            seen = self._seen.get(task_id)
            if seen is not None and task_id not in self._latest and seen[1].updated_at >= self._since:
                self._latest.put(task_id, seen[1])
        self._since = None

    def close(self) -> None:
        """Stop receiving; an iteration in progress ends once what is pending is taken."""
        if not self._latest.ended:
            self._latest.end()
            self._events._drop(self, self.task_ids)

    async def __aenter__(self) -> TaskSubscription:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class TaskEvents:
    """Who listens to which task, in this process; ``publish`` is the runner's ``on_change``."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._by_task: dict[str, set[TaskSubscription]] = {}
        self._clock = clock  # the one the runners stamp ``updated_at`` with

    def subscribe(
        self, task_ids: Iterable[str], *, current: Mapping[str, TaskRecord] | None = None, reading: bool = False
    ) -> TaskSubscription:
        """Start receiving changes of these tasks (ids the caller may see: the stream checks that).

        ``current``: the records the caller already read, by id; only changes after them are sent.
        ``reading``: the caller reads them next and passes them to :meth:`TaskSubscription.narrow`;
        records relayed meanwhile wait for that read, and a change made since now is sent as it shows.
        """
        since = self._clock() if reading and current is None else None
        subscription = TaskSubscription(self, frozenset(task_ids), since=since)
        for task_id in subscription.task_ids:
            self._by_task.setdefault(task_id, set()).add(subscription)
        if current is not None:
            subscription._start_from(current)
        return subscription

    def publish(self, record: TaskRecord) -> None:
        """Hand a change committed by this process to every stream watching its task (no-op when none is)."""
        self._fan_out(record, relayed=False)

    def relay(self, record: TaskRecord) -> None:
        """Hand a task as another process left it (read back from a shared store) to its streams:
        sent only if newer than what each stream got and different from it on the wire."""
        self._fan_out(record, relayed=True)

    def _fan_out(self, record: TaskRecord, *, relayed: bool) -> None:
        watchers = self._by_task.get(record.task_id)
        if not watchers:
            return
        view = record.view()
        for subscription in watchers:
            subscription._offer(record.version, view, relayed=relayed)

    def watching(self, task_id: str) -> int:
        """How many streams watch a task (the relay reads only those; also for tests and metrics)."""
        return len(self._by_task.get(task_id, ()))

    def watched(self) -> list[str]:
        """The ids some stream watches (what the relay reads again after a lost subscription)."""
        return list(self._by_task)

    def _drop(self, subscription: TaskSubscription, task_ids: Iterable[str]) -> None:
        for task_id in task_ids:
            watchers = self._by_task.get(task_id)
            if watchers is not None:
                watchers.discard(subscription)
                if not watchers:
                    del self._by_task[task_id]
