"""Where tasks live between requests: the ``TaskStore`` interface and its two built-in stores.

A task that waits for a person holds no coroutine and no memory: it is one record (arguments,
answers so far, open questions) in a store, so it outlives the request, the connection and
the process. Every change is a compare-and-set on the record's ``version``, which is what lets
two requests (or two processes) race on one task and have exactly one of them win.

* :class:`InMemoryTaskStore`: a dict, for tests and single-process servers that may lose tasks.
* :class:`SQLiteTaskStore`: one file, no server to run; the default for durable tasks. WAL mode,
  safe for several processes on the same file, survives a killed process.

Other stores (Redis: ``elicitkit.server.tasks.redis_store``; a SQL server) implement :class:`TaskStore`;
``tests/server/tasks/test_store.py`` is the contract suite they should pass. A store that talks to
a server raises :class:`TaskStoreUnavailable` when it cannot reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

import orjson

from elicitkit.errors import TaskError
from elicitkit.protocol.errors import INTERNAL_ERROR, MCPError
from elicitkit.protocol.tasks import TERMINAL, WORKING, TaskView

__all__ = [
    "InMemoryTaskStore",
    "OpenRequest",
    "RecordedAnswer",
    "SQLiteTaskStore",
    "TaskExists",
    "TaskRecord",
    "TaskStore",
    "TaskStoreUnavailable",
    "record_from_json",
    "record_to_json",
]

_T = TypeVar("_T")


# ----------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class RecordedAnswer:
    """One answer the task holds, under the tool's own key for the question.

    ``fingerprint`` pins the answer to the exact question it answered (as a 2026 round seals
    it). ``None`` means the answer just arrived through ``tasks/update`` and matches its key
    alone, like a retry's ``inputResponses``; the next run pins it.
    """

    response: dict[str, Any]
    fingerprint: str | None = None


@dataclass(frozen=True, slots=True)
class OpenRequest:
    """A question the task is waiting on, under the key the client sees (the wire key).

    ``key`` is the tool's own key for it (``q1``...), stable across runs; the wire key differs
    from it only after a re-ask, because a wire key is never reused within a task.
    """

    key: str
    request: dict[str, Any]  # {"method": ..., "params": ...}, as inputRequests shows it
    fingerprint: str


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """Everything a task is. Immutable: change it with ``dataclasses.replace`` and a store CAS.

    ``version`` is the store's: 0 before :meth:`TaskStore.create`, then one more per write.
    Times are epoch seconds. ``lease_owner`` / ``lease_expires_at`` mark a run in progress, so a
    task whose process died mid-run can be told from one that is still running.
    """

    task_id: str
    tool: str
    arguments: dict[str, Any]
    status: str
    created_at: float
    updated_at: float
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    status_message: str | None = None
    open_requests: Mapping[str, OpenRequest] = field(default_factory=dict)  # wire key -> question
    answers: Mapping[str, RecordedAnswer] = field(default_factory=dict)  # tool key -> answer
    issued_keys: tuple[str, ...] = ()  # every wire key ever shown, so none is reused
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    owner: str | None = None  # the principal the task belongs to; others cannot see it
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    version: int = 0

    @property
    def expires_at(self) -> float | None:
        """When the task may be discarded (creation + TTL); None for unlimited."""
        return None if self.ttl_ms is None else self.created_at + self.ttl_ms / 1000

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def view(self) -> TaskView:
        """The record as the wire shows it."""
        return TaskView(
            task_id=self.task_id,
            status=self.status,
            created_at=self.created_at,
            updated_at=self.updated_at,
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
            status_message=self.status_message,
            input_requests={wire: open_.request for wire, open_ in self.open_requests.items()},
            result=self.result,
            error=self.error,
        )


def record_to_json(record: TaskRecord) -> bytes:
    """A record as compact JSON (everything but ``version``, which the store keeps)."""
    body: dict[str, Any] = {
        "id": record.task_id,
        "tool": record.tool,
        "args": record.arguments,
        "st": record.status,
        "c": record.created_at,
        "u": record.updated_at,
        "ttl": record.ttl_ms,
    }
    if record.poll_interval_ms is not None:
        body["poll"] = record.poll_interval_ms
    if record.status_message is not None:
        body["msg"] = record.status_message
    if record.open_requests:
        body["open"] = {w: [o.key, o.request, o.fingerprint] for w, o in record.open_requests.items()}
    if record.answers:
        body["ans"] = {k: [a.response, a.fingerprint] for k, a in record.answers.items()}
    if record.issued_keys:
        body["keys"] = list(record.issued_keys)
    if record.result is not None:
        body["res"] = record.result
    if record.error is not None:
        body["err"] = record.error
    if record.owner is not None:
        body["own"] = record.owner
    if record.lease_owner is not None:
        body["lo"] = record.lease_owner
        body["le"] = record.lease_expires_at
    return orjson.dumps(body)


def record_from_json(data: bytes | str, version: int) -> TaskRecord:
    """The inverse of :func:`record_to_json`."""
    body = orjson.loads(data)
    return TaskRecord(
        task_id=body["id"],
        tool=body["tool"],
        arguments=body["args"],
        status=body["st"],
        created_at=body["c"],
        updated_at=body["u"],
        ttl_ms=body["ttl"],
        poll_interval_ms=body.get("poll"),
        status_message=body.get("msg"),
        open_requests={w: OpenRequest(k, r, f) for w, (k, r, f) in body.get("open", {}).items()},
        answers={k: RecordedAnswer(r, f) for k, (r, f) in body.get("ans", {}).items()},
        issued_keys=tuple(body.get("keys", ())),
        result=body.get("res"),
        error=body.get("err"),
        owner=body.get("own"),
        lease_owner=body.get("lo"),
        lease_expires_at=body.get("le"),
        version=version,
    )


class TaskExists(TaskError):
    """``create`` was given an id that is already taken (ids must be fresh and unguessable)."""


class TaskStoreUnavailable(TaskError, MCPError):
    """The store cannot be reached right now (a network store's server is down or restarting).

    Also an :class:`MCPError` (-32603 with a fixed message), so a request that needed the store
    is answered with a clean error that says to try again, never with the driver's exception
    text; ``reason`` (for the log) says what went wrong.
    """

    def __init__(self, reason: str) -> None:
        MCPError.__init__(self, INTERNAL_ERROR, "the task store is unavailable right now; try again shortly")
        self.reason = reason


# ----------------------------------------------------------------------------- interface


class TaskStore(ABC):
    """Durable task records with compare-and-set writes.

    The contract (checked by ``tests/server/tasks/test_store.py`` for every store):

    * :meth:`create` returns only once a :meth:`get` for the id would find the record, in this
      process and in any other sharing the store (SEP-2663: no ``CreateTaskResult`` before that).
    * :meth:`replace` writes a whole record if and only if the stored version is still
      ``expected_version``; of two writers that read the same version exactly one wins. The
      loser gets None and must re-read. Status, answers, open questions, result and lease change
      together or not at all.
    * Records come back equal to what was written (JSON types: dicts, lists, str, numbers,
      bools, None). Callers must not mutate them.
    * The store does not judge contents (status moves, TTLs): the task runner does.
    """

    @abstractmethod
    async def create(self, record: TaskRecord) -> TaskRecord:
        """Store a new record; returns it with ``version`` 1. :class:`TaskExists` if the id is taken."""

    @abstractmethod
    async def get(self, task_id: str) -> TaskRecord | None:
        """The current record, or None if there is none (never created, deleted, or purged)."""

    @abstractmethod
    async def replace(self, record: TaskRecord, *, expected_version: int) -> TaskRecord | None:
        """Compare-and-set: store ``record`` as version ``expected_version + 1``, or return None."""

    @abstractmethod
    async def delete(self, task_id: str, *, expected_version: int | None = None) -> bool:
        """Remove a record (only at ``expected_version`` when given); whether one was removed."""

    @abstractmethod
    async def list_expired(self, now: float, *, limit: int = 100) -> list[str]:
        """Ids of records whose TTL ran out at ``now`` (creation + TTL <= now), oldest first."""

    @abstractmethod
    async def list_stale(self, now: float, *, limit: int = 100) -> list[str]:
        """Ids of ``working`` records whose run lease is missing or ran out at ``now``.

        Such a task was being run by a process that is gone (or never started it): the runner
        decides whether to fail it or run it again.
        """

    async def close(self) -> None:  # noqa: B027 - a store without resources needs nothing here
        """Release connections and threads; the records stay (for durable stores)."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


# ----------------------------------------------------------------------------- in memory


class InMemoryTaskStore(TaskStore):
    """Records in a dict of this process: fast, and gone with the process.

    Every method finishes without awaiting, so on one event loop each call is atomic and the
    compare-and-set needs no lock. Not for use from several threads.
    """

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}

    def __len__(self) -> int:
        return len(self._records)

    async def create(self, record: TaskRecord) -> TaskRecord:
        if record.task_id in self._records:
            raise TaskExists(record.task_id)
        stored = _with_version(record, 1)
        self._records[record.task_id] = stored
        return stored

    async def get(self, task_id: str) -> TaskRecord | None:
        return self._records.get(task_id)

    async def replace(self, record: TaskRecord, *, expected_version: int) -> TaskRecord | None:
        current = self._records.get(record.task_id)
        if current is None or current.version != expected_version:
            return None
        stored = _with_version(record, expected_version + 1)
        self._records[record.task_id] = stored
        return stored

    async def delete(self, task_id: str, *, expected_version: int | None = None) -> bool:
        current = self._records.get(task_id)
        if current is None or (expected_version is not None and current.version != expected_version):
            return False
        del self._records[task_id]
        return True

    async def list_expired(self, now: float, *, limit: int = 100) -> list[str]:
        due = [(r.expires_at, r.task_id) for r in self._records.values() if r.expires_at is not None]
        return [task_id for at, task_id in sorted(due) if at <= now][:limit]

    async def list_stale(self, now: float, *, limit: int = 100) -> list[str]:
        return [r.task_id for r in self._records.values() if r.status == WORKING and _lease_lapsed(r, now)][:limit]


def _with_version(record: TaskRecord, version: int) -> TaskRecord:
    return dataclasses.replace(record, version=version)


def _lease_lapsed(record: TaskRecord, now: float) -> bool:
    return record.lease_expires_at is None or record.lease_expires_at <= now


# ----------------------------------------------------------------------------- SQLite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS elicitkit_tasks (
    task_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    expires_at REAL,
    lease_expires_at REAL,
    body BLOB NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS elicitkit_tasks_expiry ON elicitkit_tasks (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS elicitkit_tasks_working ON elicitkit_tasks (lease_expires_at) WHERE status = 'working';
"""

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]


class SQLiteTaskStore(TaskStore):
    """Records in one SQLite file: no server to run, durable across restarts and redeploys.

    All database work runs on one private thread that owns the connection, so calls from the
    event loop never block it and never share a connection between threads (measured against
    ``aiosqlite``, which does the same with a queue: see docs/decisions/tasks.md).

    * WAL journal: readers never wait for the writer, and several processes can use one file.
    * ``synchronous``: ``NORMAL`` (default) keeps every committed task through a killed process;
      ``FULL`` also through a power cut, at a cost per write.
    * ``busy_timeout`` (seconds): how long a write waits for another process's write to finish.
    * A new file is created (with its directory) readable by this user only: it holds answers.
    * Each write is one statement, so a compare-and-set is atomic without a transaction.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Synchronous = "NORMAL",
        busy_timeout: float = 10.0,
    ) -> None:
        if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self.path = Path(path)
        self._synchronous = synchronous
        self._busy_ms = int(busy_timeout * 1000)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="elicitkit-tasks-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._lock = threading.Lock()  # guards _conn against a close racing the worker thread

    # -- plumbing

    def _connect(self) -> sqlite3.Connection:
        # answers can be personal: a new file (and SQLite's -wal/-shm, which copy its mode) is
        # readable by this user only
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=self._busy_ms / 1000)
        conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.executescript(_SCHEMA)
        return conn

    def _db(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise RuntimeError("the task store is closed")
            if self._conn is None:
                self._conn = self._connect()
            return self._conn

    async def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed:
            raise RuntimeError("the task store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(self._db()))

    # -- the interface

    async def create(self, record: TaskRecord) -> TaskRecord:
        body = record_to_json(record)

        def insert(db: sqlite3.Connection) -> None:
            try:
                db.execute(
                    "INSERT INTO elicitkit_tasks (task_id, version, status, expires_at, lease_expires_at, body)"
                    " VALUES (?, 1, ?, ?, ?, ?)",
                    (record.task_id, record.status, record.expires_at, record.lease_expires_at, body),
                )
            except sqlite3.IntegrityError:
                raise TaskExists(record.task_id) from None

        await self._run(insert)
        return _with_version(record, 1)

    async def get(self, task_id: str) -> TaskRecord | None:
        def select(db: sqlite3.Connection) -> tuple[int, bytes] | None:
            row: tuple[int, bytes] | None = db.execute(
                "SELECT version, body FROM elicitkit_tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
            return row

        row = await self._run(select)
        return None if row is None else record_from_json(row[1], row[0])

    async def replace(self, record: TaskRecord, *, expected_version: int) -> TaskRecord | None:
        body = record_to_json(record)

        def update(db: sqlite3.Connection) -> int:
            cursor = db.execute(
                "UPDATE elicitkit_tasks SET version = version + 1, status = ?, expires_at = ?,"
                " lease_expires_at = ?, body = ? WHERE task_id = ? AND version = ?",
                (record.status, record.expires_at, record.lease_expires_at, body, record.task_id, expected_version),
            )
            return cursor.rowcount

        changed = await self._run(update)
        return _with_version(record, expected_version + 1) if changed == 1 else None

    async def delete(self, task_id: str, *, expected_version: int | None = None) -> bool:
        def remove(db: sqlite3.Connection) -> int:
            if expected_version is None:
                return db.execute("DELETE FROM elicitkit_tasks WHERE task_id = ?", (task_id,)).rowcount
            return db.execute(
                "DELETE FROM elicitkit_tasks WHERE task_id = ? AND version = ?", (task_id, expected_version)
            ).rowcount

        return await self._run(remove) == 1

    async def list_expired(self, now: float, *, limit: int = 100) -> list[str]:
        def select(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT task_id FROM elicitkit_tasks WHERE expires_at IS NOT NULL AND expires_at <= ?"
                " ORDER BY expires_at LIMIT ?",
                (now, limit),
            ).fetchall()
            return [r[0] for r in rows]

        return await self._run(select)

    async def list_stale(self, now: float, *, limit: int = 100) -> list[str]:
        def select(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT task_id FROM elicitkit_tasks WHERE status = 'working'"
                " AND (lease_expires_at IS NULL OR lease_expires_at <= ?) LIMIT ?",
                (now, limit),
            ).fetchall()
            return [r[0] for r in rows]

        return await self._run(select)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def shut() -> None:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, shut)
        self._executor.shutdown(wait=True)

    async def row_bytes(self, task_id: str) -> int:
        """Bytes one record takes in the table (key, columns and body), for sizing the file."""

        def size(db: sqlite3.Connection) -> int:
            row = db.execute(
                "SELECT length(task_id) + length(body) + 8 * 4 FROM elicitkit_tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
            return int(row[0]) if row else 0

        return await self._run(size)
