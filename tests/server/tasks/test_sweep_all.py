"""A sweep deletes every expired task, not a fixed number: 10,000 expired tasks (``--slow``; 1,500
by default, 15 times the old cap) are gone from SQLite and from Redis within two sweeps (issue 28,
point 8: at most 100 went per 30 s sweep, so any creation rate above 200 a minute grew the store
forever)."""

from __future__ import annotations

import dataclasses
import time
import uuid
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from elicitkit.server.tasks.redis_store import RedisTaskStore
from elicitkit.server.tasks.runner import TaskRunner
from elicitkit.server.tasks.store import SQLiteTaskStore, TaskStore
from server.tasks.test_runner import FakeTool
from server.tasks.test_store import NOW, waiting_task

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SIZES = [1_500, pytest.param(10_000, marks=pytest.mark.slow)]


async def _fill(store: TaskStore, expired_count: int) -> None:
    expired = dataclasses.replace(waiting_task(), ttl_ms=1000, created_at=NOW, updated_at=NOW)
    for _ in range(expired_count):
        await store.create(dataclasses.replace(expired, task_id=str(uuid.uuid4())))
    await store.create(waiting_task(task_id="kept", ttl_ms=None))


async def _two_sweeps_leave_nothing_expired(store: TaskStore, expired_count: int) -> float:
    runner = TaskRunner(store, FakeTool(), clock=lambda: NOW + 60)
    started = time.perf_counter()
    first, _ = await runner.sweep()
    second, _ = await runner.sweep()
    took = time.perf_counter() - started
    assert first + second == expired_count
    assert await store.list_expired(NOW + 60, limit=expired_count) == []
    assert await store.get("kept") is not None  # a task with time left stays
    return took


@pytest.mark.parametrize("expired_count", SIZES)
async def test_sqlite_loses_every_expired_task_within_two_sweeps(tmp_path: Path, expired_count: int) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db")
    try:
        await _fill(store, expired_count)
        took = await _two_sweeps_leave_nothing_expired(store, expired_count)
        print(f"sqlite: {expired_count} expired tasks swept in {took:.2f} s")
        count = await store._run(lambda db: db.execute("SELECT COUNT(*) FROM elicitkit_tasks").fetchone()[0])
        assert count == 1
    finally:
        await store.close()


@pytest.mark.parametrize("expired_count", SIZES)
async def test_redis_loses_every_expired_task_within_two_sweeps(
    client: aioredis.Redis, prefix: str, expired_count: int
) -> None:
    store = RedisTaskStore(client, prefix=prefix)
    await _fill(store, expired_count)
    took = await _two_sweeps_leave_nothing_expired(store, expired_count)
    print(f"redis: {expired_count} expired tasks swept in {took:.2f} s")
    left = [key async for key in client.scan_iter(match=f"{prefix}task:*", count=1000)]
    assert left == [f"{prefix}task:kept".encode()]
    assert await client.zcard(f"{prefix}tasks:expiry") == 0
