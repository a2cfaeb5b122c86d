"""Tasks (SEP-2663) on the server: calls that outlive their request, and the store they live in.

``store`` keeps task records (in memory, or in one SQLite file that survives restarts);
``runner`` advances a task by re-running its tool with the answers recorded so far, the same
replay contract as a 2026-07-28 round; ``events`` hands each committed change to the
``subscriptions/listen`` streams of this process that watch the task; ``relay`` brings them the
changes other processes commit to a shared store (``redis_store``).
"""

from __future__ import annotations

from elicitkit.server.tasks.events import TaskEvents, TaskSubscription
from elicitkit.server.tasks.runner import TaskRunner
from elicitkit.server.tasks.store import (
    InMemoryTaskStore,
    OpenRequest,
    RecordedAnswer,
    SQLiteTaskStore,
    TaskExists,
    TaskRecord,
    TaskStore,
)

__all__ = [
    "InMemoryTaskStore",
    "OpenRequest",
    "RecordedAnswer",
    "SQLiteTaskStore",
    "TaskEvents",
    "TaskExists",
    "TaskRecord",
    "TaskRunner",
    "TaskStore",
    "TaskSubscription",
]
