"""The TaskStore contract, run against every store (in memory, SQLite, a real Redis), plus what
only a file can do (restart, two processes). Redis-only behaviour is in tests/backplane."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import subprocess
import sys
import textwrap
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import orjson
import pytest
import redis.asyncio as aioredis

from elicitkit.server.tasks import (
    InMemoryTaskStore,
    OpenRequest,
    RecordedAnswer,
    SQLiteTaskStore,
    TaskExists,
    TaskRecord,
    TaskStore,
)
from elicitkit.server.tasks.redis_store import RedisTaskStore
from elicitkit.server.tasks.store import record_from_json, record_to_json

pytestmark = pytest.mark.anyio

NOW = 1_795_000_000.0
REPO = Path(__file__).resolve().parents[3]

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


def waiting_task(task_id: str | None = None, **changes: object) -> TaskRecord:
    """A typical task waiting for a person: one answer recorded, one question open."""
    record = TaskRecord(
        task_id=task_id or str(uuid.uuid4()),
        tool="deploy",
        arguments={"service": "api", "version": "1.2.3", "note": "héllo ✓"},
        status="input_required",
        created_at=NOW,
        updated_at=NOW + 1.5,
        ttl_ms=3_600_000,
        poll_interval_ms=1000,
        status_message="waiting for an approver",
        open_requests={"q2": OpenRequest("q2", QUESTION, "Zm9vYmFyYmF6cXV4MTIzNA")},
        answers={"q1": RecordedAnswer({"action": "accept", "content": {"env": "prod"}}, "YmF6cXV4Zm9vYmFyNTY3OA")},
        issued_keys=("q1", "q2"),
        owner="alice",
    )
    return dataclasses.replace(record, **changes)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """One real ``redis-server`` for the contract runs on Redis (each test uses its own key prefix)."""
    from kit.fleet import redis_server  # here: the RSS probe below imports this module without tests/ on its path

    with redis_server() as server:
        yield server.url


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    if request.param == "redis":
        client = aioredis.Redis.from_url(request.getfixturevalue("redis_url"))
        try:
            async with RedisTaskStore(client, prefix=f"test-{uuid.uuid4().hex}:") as on_redis:
                yield on_redis
        finally:
            await client.aclose()
        return
    made: TaskStore = InMemoryTaskStore() if request.param == "memory" else SQLiteTaskStore(tmp_path / "tasks.db")
    async with made:
        yield made


# ----------------------------------------------------------------------------- the contract


async def test_create_then_get_returns_the_same_record(store: TaskStore) -> None:
    record = waiting_task()
    created = await store.create(record)
    assert created.version == 1
    assert created == dataclasses.replace(record, version=1)
    assert await store.get(record.task_id) == created


async def test_terminal_records_round_trip(store: TaskStore) -> None:
    done = waiting_task(
        status="completed",
        open_requests={},
        result={"content": [{"type": "text", "text": "ok"}], "isError": False, "structuredContent": {"n": 1.5}},
        ttl_ms=None,
        poll_interval_ms=None,
        status_message=None,
        owner=None,
    )
    failed = waiting_task(status="failed", open_requests={}, error={"code": -32603, "message": "boom", "data": [1]})
    for record in (done, failed):
        await store.create(record)
        assert await store.get(record.task_id) == dataclasses.replace(record, version=1)


async def test_create_refuses_a_taken_id(store: TaskStore) -> None:
    record = await store.create(waiting_task())
    with pytest.raises(TaskExists):
        await store.create(waiting_task(record.task_id, tool="other"))
    assert await store.get(record.task_id) == record


async def test_get_unknown_is_none(store: TaskStore) -> None:
    assert await store.get("no-such-task") is None


async def test_replace_is_compare_and_set(store: TaskStore) -> None:
    created = await store.create(waiting_task())
    working = dataclasses.replace(created, status="working", open_requests={}, updated_at=NOW + 9)
    stored = await store.replace(working, expected_version=1)
    assert stored is not None and stored.version == 2 and stored.status == "working"
    assert await store.get(created.task_id) == stored
    # a writer that read version 1 loses, and changes nothing
    stale = dataclasses.replace(created, status="cancelled")
    assert await store.replace(stale, expected_version=1) is None
    assert await store.get(created.task_id) == stored


async def test_replace_of_a_missing_record_is_refused(store: TaskStore) -> None:
    assert await store.replace(waiting_task("ghost"), expected_version=1) is None
    assert await store.get("ghost") is None


async def test_concurrent_compare_and_set_has_exactly_one_winner(store: TaskStore) -> None:
    created = await store.create(waiting_task())
    attempts = [
        store.replace(dataclasses.replace(created, status_message=f"writer {i}"), expected_version=1) for i in range(8)
    ]
    results = await asyncio.gather(*attempts)
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert await store.get(created.task_id) == winners[0]


async def test_delete(store: TaskStore) -> None:
    created = await store.create(waiting_task())
    assert not await store.delete(created.task_id, expected_version=7)
    assert await store.get(created.task_id) == created
    assert await store.delete(created.task_id, expected_version=1)
    assert await store.get(created.task_id) is None
    assert not await store.delete(created.task_id)
    other = await store.create(waiting_task())
    assert await store.delete(other.task_id)


async def test_list_expired(store: TaskStore) -> None:
    soon = await store.create(waiting_task(ttl_ms=1000))  # expires at NOW + 1
    later = await store.create(waiting_task(ttl_ms=60_000))  # NOW + 60
    await store.create(waiting_task(ttl_ms=None))  # never
    assert await store.list_expired(NOW) == []
    assert await store.list_expired(NOW + 1) == [soon.task_id]
    assert await store.list_expired(NOW + 3600) == [soon.task_id, later.task_id]
    assert await store.list_expired(NOW + 3600, limit=1) == [soon.task_id]


async def test_expiry_follows_a_changed_ttl(store: TaskStore) -> None:
    created = await store.create(waiting_task(ttl_ms=1000))
    await store.replace(dataclasses.replace(created, ttl_ms=120_000), expected_version=1)
    assert await store.list_expired(NOW + 60) == []
    assert await store.list_expired(NOW + 120) == [created.task_id]


async def test_list_stale_finds_working_tasks_without_a_live_lease(store: TaskStore) -> None:
    unleased = await store.create(waiting_task(status="working", open_requests={}))
    lapsed = await store.create(
        waiting_task(status="working", open_requests={}, lease_owner="proc-a", lease_expires_at=NOW + 5)
    )
    live = await store.create(
        waiting_task(status="working", open_requests={}, lease_owner="proc-b", lease_expires_at=NOW + 60)
    )
    await store.create(waiting_task())  # waiting for input: nothing is running, nothing is stale
    await store.create(waiting_task(status="completed", open_requests={}, result={"content": []}))
    assert sorted(await store.list_stale(NOW + 10)) == sorted([unleased.task_id, lapsed.task_id])
    assert live.task_id in await store.list_stale(NOW + 61)
    assert len(await store.list_stale(NOW + 61, limit=2)) == 2


def test_json_form_round_trips_and_is_compact() -> None:
    record = waiting_task()
    data = record_to_json(record)
    assert record_from_json(data, 5) == dataclasses.replace(record, version=5)
    minimal = TaskRecord("t", "tool", {}, "working", NOW, NOW, None)
    assert record_from_json(record_to_json(minimal), 1) == dataclasses.replace(minimal, version=1)
    # absent parts cost nothing: only the fields every task has are written
    assert set(orjson.loads(record_to_json(minimal))) == {"id", "tool", "args", "st", "c", "u", "ttl"}


def test_view_shows_open_questions_under_their_wire_keys() -> None:
    view = waiting_task(open_requests={"q2.2": OpenRequest("q2", QUESTION, "f")}).view()
    assert view.status == "input_required"
    assert dict(view.input_requests) == {"q2.2": QUESTION}
    assert view.ttl_ms == 3_600_000 and view.poll_interval_ms == 1000
    assert waiting_task(ttl_ms=2000).expires_at == NOW + 2


# ----------------------------------------------------------------------------- SQLite only


async def test_sqlite_task_survives_closing_and_reopening(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    first = SQLiteTaskStore(path)
    created = await first.create(waiting_task())
    await first.close()
    async with SQLiteTaskStore(path) as second:
        again = await second.get(created.task_id)
        assert again == created
        assert again is not None and again.status == "input_required"
        assert dict(again.view().input_requests) == {"q2": QUESTION}


async def test_sqlite_two_connections_race_and_one_wins(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    async with SQLiteTaskStore(path) as a, SQLiteTaskStore(path) as b:
        created = await a.create(waiting_task())
        seen_by_b = await b.get(created.task_id)  # strongly consistent across connections
        assert seen_by_b == created
        results = await asyncio.gather(
            a.replace(dataclasses.replace(created, status="working"), expected_version=1),
            b.replace(dataclasses.replace(created, status="cancelled"), expected_version=1),
        )
        winners = [r for r in results if r is not None]
        assert len(winners) == 1
        assert await a.get(created.task_id) == await b.get(created.task_id) == winners[0]


_INCREMENTER = textwrap.dedent(
    """
    import asyncio, dataclasses, sys
    from elicitkit.server.tasks import SQLiteTaskStore

    async def main(path, task_id, times):
        async with SQLiteTaskStore(path) as store:
            done = conflicts = 0
            while done < times:
                current = await store.get(task_id)
                count = current.arguments["count"] + 1
                new = dataclasses.replace(current, arguments={"count": count})
                if await store.replace(new, expected_version=current.version) is None:
                    conflicts += 1
                else:
                    done += 1
            print(conflicts)

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    """
)


async def test_sqlite_two_processes_lose_no_update(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    times = 60
    async with SQLiteTaskStore(path) as store:
        created = await store.create(waiting_task(arguments={"count": 0}))
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                _INCREMENTER,
                str(path),
                created.task_id,
                str(times),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            for _ in range(2)
        ]
        outputs = [await asyncio.wait_for(p.communicate(), timeout=60) for p in procs]
        assert all(p.returncode == 0 for p in procs), outputs
        final = await store.get(created.task_id)
        assert final is not None
        assert final.arguments["count"] == 2 * times  # every compare-and-set that won counted once
        assert final.version == 1 + 2 * times


async def test_closed_sqlite_store_refuses_work(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db")
    await store.create(waiting_task())
    await store.close()
    await store.close()  # twice is fine
    with pytest.raises(RuntimeError):
        await store.get("x")


async def test_sqlite_makes_a_private_file_in_a_new_directory(tmp_path: Path) -> None:
    path = tmp_path / "state" / "deeper" / "tasks.db"
    async with SQLiteTaskStore(path) as store:
        await store.create(waiting_task())
        made = sorted(p.name for p in path.parent.iterdir())
        assert made == ["tasks.db", "tasks.db-shm", "tasks.db-wal"]
        for name in made:  # the database and SQLite's -wal / -shm beside it, while open
            assert (path.parent / name).stat().st_mode & 0o077 == 0, name


def test_sqlite_rejects_an_unknown_synchronous_mode(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SQLiteTaskStore(tmp_path / "x.db", synchronous="SOMETIMES")  # type: ignore[arg-type]


async def test_sqlite_uses_wal(tmp_path: Path) -> None:
    async with SQLiteTaskStore(tmp_path / "tasks.db") as store:
        await store.create(waiting_task())
    assert (tmp_path / "tasks.db").exists()
    with sqlite3.connect(tmp_path / "tasks.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# ----------------------------------------------------------------------------- sizes (issue 13 target)


async def test_memory_per_waiting_task_in_memory_store(record_property: Callable[[str, object], None]) -> None:
    store = InMemoryTaskStore()
    n = 2000
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(n):  # the record is built inside: all a waiting task holds is counted
            await store.create(waiting_task(f"task-{i:05d}"))
        per_task = (tracemalloc.get_traced_memory()[0] - before) / n
    finally:
        tracemalloc.stop()
    record_property("inmemory_bytes_per_waiting_task", round(per_task))
    print(f"\nInMemoryTaskStore: {per_task:.0f} B per waiting task")
    assert len(store) == n
    assert per_task < 8192  # a record of plain data; a parked coroutine with its frames costs far more


async def test_sqlite_row_size_per_waiting_task(tmp_path: Path, record_property: Callable[[str, object], None]) -> None:
    async with SQLiteTaskStore(tmp_path / "tasks.db") as store:
        record = await store.create(waiting_task())
        row = await store.row_bytes(record.task_id)
    record_property("sqlite_row_bytes_per_waiting_task", row)
    print(f"\nSQLiteTaskStore: {row} B per waiting-task row")
    assert 0 < row < 2048


_RSS_PROBE = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, sys.argv[2])
    from test_store import waiting_task
    from elicitkit.server.tasks import SQLiteTaskStore

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    async def main(path, n):
        async with SQLiteTaskStore(path) as store:
            for i in range(200):  # warm up: thread, connection, page cache, allocator
                await store.create(waiting_task())
            before = rss()
            for i in range(n):
                await store.create(waiting_task())
            after = rss()
            print((after - before) / n)

    asyncio.run(main(sys.argv[1], int(sys.argv[3])))
    """
)


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="RSS is read from /proc")
def test_sqlite_rss_per_waiting_task_is_under_2_kib(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    n = 3000
    out = subprocess.run(
        [sys.executable, "-c", _RSS_PROBE, str(tmp_path / "tasks.db"), str(Path(__file__).parent), str(n)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    per_task = float(out.stdout.strip())
    record_property("sqlite_rss_bytes_per_waiting_task", round(per_task))
    print(f"\nSQLiteTaskStore: {per_task:.0f} B of RSS per waiting task ({n} tasks)")
    assert per_task < 2048
