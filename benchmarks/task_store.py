"""How to run SQLite under asyncio for the task store, and what a waiting task costs.

    .venv/bin/python benchmarks/task_store.py [--n 2000]

Three ways to reach one SQLite file from the event loop, each doing the task engine's hot cycle
(create, get, compare-and-set replace) on a typical waiting-task record:

* ``private thread``: elicitkit's SQLiteTaskStore, one worker thread owning the connection;
* ``to_thread``: ``asyncio.to_thread`` on the default pool, one connection behind a lock;
* ``aiosqlite``: the aiosqlite package (its own thread and queue), if installed.

Then the sizes: JSON body and row bytes per waiting task, file bytes per task, and the RSS a
waiting task adds with the SQLite store. Last the engine: ``TaskRunner`` over the SQLite store
with a body that asks once, N tasks parked in ``input_required`` at once (RSS per waiting task,
the issue's < 2 KiB target), then all answered through ``update`` (time per answered task).
Results are in docs/decisions/tasks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sqlite3
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from elicitkit.server.tasks.runner import Finished, NeedsInput, Outcome, Question, TaskRunner
from elicitkit.server.tasks.store import (
    OpenRequest,
    RecordedAnswer,
    SQLiteTaskStore,
    TaskRecord,
    record_from_json,
    record_to_json,
)

QUESTION = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Deploy api 1.2.3 to production?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {"type": "boolean", "title": "Approve"},
                "reason": {"type": "string", "title": "Reason", "maxLength": 200},
                "window": {"type": "string", "enum": ["now", "tonight"], "title": "When"},
            },
            "required": ["approve"],
        },
    },
}


def record() -> TaskRecord:
    now = time.time()
    return TaskRecord(
        task_id=str(uuid.uuid4()),
        tool="deploy",
        arguments={"service": "api", "version": "1.2.3"},
        status="input_required",
        created_at=now,
        updated_at=now,
        ttl_ms=3_600_000,
        poll_interval_ms=1000,
        status_message="waiting for an approver",
        open_requests={"q2": OpenRequest("q2", QUESTION, "Zm9vYmFyYmF6cXV4MTIzNA")},
        answers={"q1": RecordedAnswer({"action": "accept", "content": {"env": "prod"}}, "YmF6cXV4Zm9vYmFyNTY3OA")},
        issued_keys=("q1", "q2"),
        owner="alice",
    )


# the same table and indexes as SQLiteTaskStore, so only the bridge to the event loop differs
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS t (task_id TEXT PRIMARY KEY, version INTEGER NOT NULL, status TEXT NOT NULL,"
    " expires_at REAL, lease_expires_at REAL, body BLOB NOT NULL) WITHOUT ROWID;"
    " CREATE INDEX IF NOT EXISTS t_expiry ON t (expires_at) WHERE expires_at IS NOT NULL;"
    " CREATE INDEX IF NOT EXISTS t_working ON t (lease_expires_at) WHERE status = 'working';"
)
_INSERT = "INSERT INTO t VALUES (?, 1, ?, ?, NULL, ?)"
_SELECT = "SELECT version, body FROM t WHERE task_id = ?"
_UPDATE = "UPDATE t SET version = version + 1, status = ?, body = ? WHERE task_id = ? AND version = ?"


async def cycle_store(path: Path, n: int) -> float:
    async with SQLiteTaskStore(path) as store:
        start = time.perf_counter()
        for _ in range(n):
            created = await store.create(record())
            got = await store.get(created.task_id)
            assert got is not None
            done = await store.replace(dataclasses.replace(got, status="working"), expected_version=got.version)
            assert done is not None
        return time.perf_counter() - start


async def cycle_to_thread(path: Path, n: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(_SCHEMA)
    lock = threading.Lock()

    def run(sql: str, args: tuple[Any, ...]) -> Any:
        with lock:
            cur = conn.execute(sql, args)
            return cur.fetchone() if sql.startswith("SELECT") else cur.rowcount

    start = time.perf_counter()
    for _ in range(n):
        r = record()
        body = record_to_json(r)
        await asyncio.to_thread(run, _INSERT, (r.task_id, r.status, r.expires_at, body))
        row = await asyncio.to_thread(run, _SELECT, (r.task_id,))
        assert row is not None
        got = dataclasses.replace(record_from_json(row[1], row[0]), status="working")
        changed = await asyncio.to_thread(run, _UPDATE, (got.status, record_to_json(got), r.task_id, row[0]))
        assert changed == 1
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


async def cycle_aiosqlite(path: Path, n: int) -> float | None:
    try:
        import aiosqlite
    except ImportError:
        return None
    async with aiosqlite.connect(path, isolation_level=None) as db:
        await db.execute("PRAGMA journal_mode = WAL")
        await db.execute("PRAGMA synchronous = NORMAL")
        await db.executescript(_SCHEMA)
        start = time.perf_counter()
        for _ in range(n):
            r = record()
            body = record_to_json(r)
            await db.execute(_INSERT, (r.task_id, r.status, r.expires_at, body))
            async with db.execute(_SELECT, (r.task_id,)) as cur:
                row = await cur.fetchone()
            assert row is not None
            got = dataclasses.replace(record_from_json(row[1], row[0]), status="working")
            cur2 = await db.execute(_UPDATE, (got.status, record_to_json(got), r.task_id, row[0]))
            assert cur2.rowcount == 1
        return time.perf_counter() - start


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def sizes(path: Path, n: int) -> dict[str, float]:
    async with SQLiteTaskStore(path) as store:
        for _ in range(200):
            await store.create(record())
        before = rss()
        last = None
        for _ in range(n):
            last = await store.create(record())
        after = rss()
        assert last is not None
        row = await store.row_bytes(last.task_id)
    file_bytes = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    return {
        "json_body_bytes": len(record_to_json(record())),
        "row_bytes": row,
        "file_bytes_per_task": file_bytes / (n + 200),
        "rss_bytes_per_waiting_task": (after - before) / n,
    }


async def ask_once(tool: str, arguments: dict[str, Any], answers: Any) -> Outcome:
    """A body that asks one question (the benchmark's task), then finishes with the answer."""
    answer = answers.get("q1")
    if answer is None:
        return NeedsInput((Question("q1", QUESTION, "fp-q1"),))
    return Finished({"content": [{"type": "text", "text": str(answer.response.get("content"))}]})


async def engine(path: Path, n: int) -> dict[str, float]:
    async with SQLiteTaskStore(path) as store:
        runner = TaskRunner(store, ask_once)
        warm = [await runner.create("deploy", {"service": "api"}) for _ in range(100)]
        for record in warm:
            await runner.wait(record.task_id)
        before = rss()
        start = time.perf_counter()
        ids = []
        for _ in range(n):
            created = await runner.create("deploy", {"service": "api", "version": "1.2.3"})
            ids.append(created.task_id)
        for task_id in ids:
            await runner.wait(task_id)
        parked = time.perf_counter() - start
        after = rss()
        waiting = sum([(await runner.get(i)).status == "input_required" for i in ids])
        start = time.perf_counter()
        for task_id in ids:
            await runner.update(task_id, {"q1": {"action": "accept", "content": {"approve": True}}})
        for task_id in ids:
            await runner.wait(task_id)
        answered = time.perf_counter() - start
        done = sum([(await runner.get(i)).status == "completed" for i in ids])
        await runner.aclose()
    assert waiting == n and done == n, (waiting, done)
    return {
        "engine_tasks": n,
        "engine_rss_bytes_per_waiting_task": (after - before) / n,
        "engine_us_per_task_created_and_parked": parked * 1e6 / n,
        "engine_us_per_task_answered_and_finished": answered * 1e6 / n,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000, help="cycles per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engine", type=int, default=5000, help="tasks parked at once by the engine part")
    args = parser.parse_args()
    results: dict[str, list[float]] = {"private thread": [], "to_thread": [], "aiosqlite": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for name, fn in (
                ("private thread", cycle_store),
                ("to_thread", cycle_to_thread),
                ("aiosqlite", cycle_aiosqlite),
            ):
                elapsed = await fn(Path(tmp) / f"{name.replace(' ', '_')}-{i}.db", args.n)  # type: ignore[operator]
                if elapsed is not None:
                    results[name].append(elapsed)
        print(f"create + get + compare-and-set, {args.n} cycles, median of {args.rounds} rounds:")
        for name, times in results.items():
            if times:
                med = statistics.median(times)
                print(f"  {name:15s} {med * 1e6 / args.n:8.1f} us/cycle  ({args.n / med:8.0f} cycles/s)")
            else:
                print(f"  {name:15s} not installed")
        for key, value in (await sizes(Path(tmp) / "sizes.db", 10_000)).items():
            print(f"  {key}: {value:.0f}")
        for key, value in (await engine(Path(tmp) / "engine.db", args.engine)).items():
            print(f"  {key}: {value:.0f}")


if __name__ == "__main__":
    asyncio.run(main())
