"""Tasks on Redis: what only a shared network store adds to the TaskStore contract (which
tests/server/tasks/test_store.py runs on Redis too): two instances sharing tasks, Redis's own
expiry, the change channel, and Redis going away and coming back."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

import pytest
import redis.asyncio as aioredis

from elicitkit import Client, Context, ElicitationResult, MCPError, Server
from elicitkit.elicitation.results import AcceptedElicitation
from elicitkit.errors import TaskError, TaskStoreUnavailable
from elicitkit.protocol.errors import INTERNAL_ERROR
from elicitkit.server.tasks.redis_store import GRACE, RedisTaskStore
from elicitkit.server.tasks.runner import TaskRunner
from elicitkit.tasks import TaskHandle
from kit.fleet import quick_client, redis_server
from server.tasks.test_runner import FakeTool, settle, yes
from server.tasks.test_store import waiting_task

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


# ----------------------------------------------------------------------------- two instances, one Redis


async def test_a_task_created_on_a_is_read_answered_and_finished_on_b(
    client: aioredis.Redis, other_client: aioredis.Redis, prefix: str
) -> None:
    tool_a, tool_b = FakeTool(), FakeTool()
    a = TaskRunner(RedisTaskStore(client, prefix=prefix), tool_a, runner_id="a")
    b = TaskRunner(RedisTaskStore(other_client, prefix=prefix), tool_b, runner_id="b")
    created = await a.create("deploy", {"what": "deploy"})
    waiting = await settle(a, created.task_id)
    assert waiting.status == "input_required" and not a.running(created.task_id)

    shown = await b.handle("tasks/get", {"taskId": created.task_id}, declared=True)  # read on B
    assert shown["status"] == "input_required" and list(shown["inputRequests"]) == ["q1"]
    await b.update(created.task_id, {"q1": yes()})  # answered on B: B takes the run
    done = await settle(b, created.task_id)
    assert done.status == "completed"
    assert (await a.get(created.task_id)) == done  # and A sees it finished
    assert (tool_a.runs, tool_b.runs) == (1, 1)  # A ran up to the question, B the rest: no replay on A
    assert tool_b.side_effects == [{"q1": True}] and tool_a.side_effects == []


async def test_two_instances_answering_at_once_run_the_tail_once(
    client: aioredis.Redis, other_client: aioredis.Redis, prefix: str
) -> None:
    tool_a, tool_b = FakeTool(), FakeTool()
    a = TaskRunner(RedisTaskStore(client, prefix=prefix), tool_a)
    b = TaskRunner(RedisTaskStore(other_client, prefix=prefix), tool_b)
    created = await a.create("t", {})
    await settle(a, created.task_id)
    await asyncio.gather(*(r.update(created.task_id, {"q1": yes()}) for r in (a, b, a, b)))
    await a.wait(created.task_id)
    await b.wait(created.task_id)
    assert (await a.get(created.task_id)).status == "completed"
    assert len(tool_a.side_effects) + len(tool_b.side_effects) == 1


async def test_a_run_whose_instance_died_is_taken_over_by_another(
    client: aioredis.Redis, other_client: aioredis.Redis, prefix: str
) -> None:
    hung = FakeTool(keys=(), gate=asyncio.Event())  # A's body never gets past its work
    a = TaskRunner(RedisTaskStore(client, prefix=prefix), hung, lease=1.0, runner_id="a")
    finisher = FakeTool(keys=())
    b = TaskRunner(RedisTaskStore(other_client, prefix=prefix), finisher, lease=1.0, on_interrupted="rerun")
    created = await a.create("idempotent", {})
    await asyncio.sleep(0.05)
    assert a.running(created.task_id)
    await a.aclose()  # A is gone: its lease stays and lapses
    assert await b.sweep() == (0, 0)  # not yet: the lease still runs
    await asyncio.sleep(1.1)  # A renewed it at most until it stopped
    assert await b.sweep() == (0, 1)
    done = await settle(b, created.task_id)
    assert done.status == "completed" and finisher.side_effects == [{}]
    assert hung.side_effects == []


async def test_by_default_a_dead_instance_fails_its_run_rather_than_repeat_it(
    client: aioredis.Redis, other_client: aioredis.Redis, prefix: str
) -> None:
    a = TaskRunner(RedisTaskStore(client, prefix=prefix), FakeTool(keys=(), gate=asyncio.Event()), lease=0.2)
    b = TaskRunner(RedisTaskStore(other_client, prefix=prefix), FakeTool(keys=()), lease=0.2)
    created = await a.create("t", {})
    await asyncio.sleep(0.05)
    await a.aclose()
    await asyncio.sleep(0.3)
    assert await b.sweep() == (0, 1)
    failed = await b.get(created.task_id)
    assert failed.status == "failed" and failed.error is not None and failed.error["code"] == INTERNAL_ERROR


# ----------------------------------------------------------------------------- Redis's own bookkeeping


async def test_records_carry_a_redis_expiry_past_their_ttl(client: aioredis.Redis, prefix: str) -> None:
    store = RedisTaskStore(client, prefix=prefix)
    timed = await store.create(waiting_task(ttl_ms=60_000, updated_at=waiting_task().created_at))
    pttl = await client.pttl(f"{prefix}task:{timed.task_id}")
    assert 60_000 < pttl <= (60 + GRACE) * 1000  # Redis drops it even if no instance ever sweeps
    endless = await store.create(waiting_task(ttl_ms=None))
    assert await client.pttl(f"{prefix}task:{endless.task_id}") == -1  # no TTL: kept, as in every store
    # a longer TTL moves the Redis expiry too
    longer = dataclasses.replace(timed, ttl_ms=3_600_000)
    assert await store.replace(longer, expected_version=1) is not None
    assert await client.pttl(f"{prefix}task:{timed.task_id}") > 3_600_000


async def test_ids_of_records_redis_dropped_leave_the_listings(client: aioredis.Redis, prefix: str) -> None:
    store = RedisTaskStore(client, prefix=prefix)
    gone = await store.create(waiting_task(ttl_ms=1000, status="working", open_requests={}))
    kept = await store.create(waiting_task(ttl_ms=1000, status="working", open_requests={}))
    await client.delete(f"{prefix}task:{gone.task_id}")  # what Redis's expiry does
    late = kept.created_at + 3600
    assert await store.list_expired(late) == [kept.task_id]
    assert await store.list_stale(late) == [kept.task_id]
    for index in ("expiry", "stale"):
        assert await client.zscore(f"{prefix}tasks:{index}", gone.task_id) is None  # cleaned on the way
    assert await store.get(gone.task_id) is None


async def test_only_working_tasks_are_indexed_as_possibly_stale(client: aioredis.Redis, prefix: str) -> None:
    store = RedisTaskStore(client, prefix=prefix)
    running = await store.create(waiting_task(status="working", open_requests={}, lease_expires_at=5.0))
    assert await client.zscore(f"{prefix}tasks:stale", running.task_id) == 5.0
    done = dataclasses.replace(running, status="completed", lease_expires_at=None, result={"content": []})
    assert await store.replace(done, expected_version=1) is not None
    assert await client.zscore(f"{prefix}tasks:stale", running.task_id) is None
    assert await store.delete(running.task_id)
    assert await client.zcard(f"{prefix}tasks:expiry") == 0


async def test_every_write_is_announced_on_the_change_channel(
    client: aioredis.Redis, other_client: aioredis.Redis, prefix: str
) -> None:
    watcher = RedisTaskStore(client, prefix=prefix)
    writer = RedisTaskStore(other_client, prefix=prefix)
    seen: list[str] = []
    subscribed = asyncio.Event()

    async def watch() -> None:
        changes = watcher.changes()
        first = asyncio.ensure_future(anext(changes))
        for _ in range(500):  # the subscription is live once Redis counts it
            if await client.pubsub_numsub(watcher.channel) != [(watcher.channel.encode(), 0)]:
                break
            await asyncio.sleep(0.01)
        subscribed.set()
        seen.append(await first)
        async for task_id in changes:
            seen.append(task_id)
            if len(seen) == 3:
                break
        await changes.aclose()

    watching = asyncio.create_task(watch())
    await asyncio.wait_for(subscribed.wait(), 5)
    record = await writer.create(waiting_task())
    await writer.replace(dataclasses.replace(record, status_message="x"), expected_version=1)
    assert not await writer.replace(record, expected_version=1)  # a lost CAS changes nothing: no message
    await writer.delete(record.task_id)
    await asyncio.wait_for(watching, 5)
    assert seen == [record.task_id] * 3


async def test_a_closed_store_refuses_work(client: aioredis.Redis, prefix: str) -> None:
    store = RedisTaskStore(client, prefix=prefix)
    await store.create(waiting_task())
    await store.close()
    await store.close()
    with pytest.raises(RuntimeError):
        await store.get("x")
    assert await client.ping()  # the client is the caller's: still open


# ----------------------------------------------------------------------------- Redis down, then back


async def test_redis_down_raises_task_store_unavailable_and_recovers() -> None:
    with redis_server() as server:
        own = quick_client(server.url)
        try:
            store = RedisTaskStore(own)
            record = await store.create(waiting_task())
            server.stop()
            calls: list[Any] = [
                store.create(waiting_task()),
                store.get(record.task_id),
                store.replace(record, expected_version=1),
                store.delete(record.task_id),
                store.list_expired(0.0),
                store.list_stale(0.0),
            ]
            for call in calls:
                with pytest.raises(TaskStoreUnavailable) as down:
                    await call
                assert isinstance(down.value, TaskError) and isinstance(down.value, MCPError)
                assert down.value.code == INTERNAL_ERROR and "Redis" in down.value.reason
            server.start()  # back, and empty (no persistence in the test)
            assert await store.get(record.task_id) is None
            again = await store.create(waiting_task())
            assert await store.get(again.task_id) == again
        finally:
            await own.aclose()


def task_server(store: RedisTaskStore) -> Server:
    server = Server("tasks-on-redis", task_store=store)

    @server.tool(task="optional", task_poll_interval_ms=20)
    async def approve(ctx: Context) -> str:
        answer = await ctx.elicit("Approve?", bool)
        return "approved" if isinstance(answer, AcceptedElicitation) and answer.data else "refused"

    return server


async def accept(request: Any) -> ElicitationResult[Any]:
    return ElicitationResult.accept({"value": True})


async def test_redis_down_gives_the_client_a_clean_error_and_tasks_work_once_it_is_back() -> None:
    with redis_server() as server:
        own = quick_client(server.url)
        try:
            app = task_server(RedisTaskStore(own, prefix=f"{uuid.uuid4().hex}:"))
            async with Client(app, mode="modern", elicitation_callback=accept) as client:
                assert (await client.call_tool("approve", task=True)).text == "approved"
                handle = await client.start_task("approve")
                assert isinstance(handle, TaskHandle)
                server.stop()
                for attempt in (client.get_task(handle.task_id), client.start_task("approve")):
                    with pytest.raises(MCPError) as down:
                        await attempt
                    assert down.value.code == INTERNAL_ERROR
                    assert down.value.message == "the task store is unavailable right now; try again shortly"
                server.start()
                assert (await client.call_tool("approve", task=True)).text == "approved"
            await app.tasks.aclose()
        finally:
            await own.aclose()
