"""Task status notifications across a fleet: two servers sharing a ``RedisTaskStore`` on a real
``redis-server``, each serving HTTP. A ``subscriptions/listen`` stream on A hears a task that B
runs, answers and finishes; each change reaches every listening client exactly once (none twice
on the instance that made it, none for writes the wire does not show); the relay picks up again
after Redis restarts; a server whose store is not shared starts nothing."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from elicitkit import Context, Server
from elicitkit.elicitation.results import AcceptedElicitation
from elicitkit.protocol.tasks import EXTENSION_ID
from elicitkit.server.tasks import InMemoryTaskStore, SQLiteTaskStore, TaskRecord
from elicitkit.server.tasks.events import TaskEvents
from elicitkit.server.tasks.redis_store import RedisTaskStore
from elicitkit.server.tasks.relay import TaskChangeRelay
from elicitkit.server.tasks.runner import TaskRunner
from elicitkit.transports.http.serve import serve_http_background
from kit.fleet import quick_client, redis_server
from kit.raw import ALL_CAPS, Modern, accept, meta, wait_until
from server.tasks.test_runner import FakeTool, settle, yes
from server.test_listen import frames, http_wire_for

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

EXT = meta(caps={**ALL_CAPS, "extensions": {EXTENSION_ID: {}}})
QUIET = 0.6  # seconds a listener is watched after the last change, for anything sent twice


@dataclasses.dataclass
class Gates:
    """Where the tool waits, so each status is held long enough to be seen on every listener."""

    asking: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    finishing: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)


def instance(store: RedisTaskStore, gates: Gates) -> Server:
    """One instance of the fleet; its runs renew their lease every 0.1 s (writes no client sees)."""
    server = Server("fleet-tasks", task_store=store)
    server.tasks.lease = 0.3

    @server.tool(task="optional", task_poll_interval_ms=50)
    async def approve(ctx: Context) -> str:
        await gates.asking.wait()
        answer = await ctx.elicit("Approve?", bool)
        await gates.finishing.wait()
        return "approved" if isinstance(answer, AcceptedElicitation) and answer.data else "refused"

    return server


async def listen(url: str, task_id: str, heard: list[dict[str, Any]]) -> None:
    """A client's listen stream for one task, until cancelled; keeps its task notifications."""
    async for frame in frames(url, {"taskIds": [task_id]}, EXT, 1_000):
        if frame["method"] == "notifications/tasks":
            heard.append(frame["params"])


def statuses(heard: list[dict[str, Any]]) -> list[str]:
    return [params["status"] for params in heard]


def has(heard: list[dict[str, Any]], *expected: str) -> Callable[[], bool]:
    return lambda: statuses(heard) == list(expected)


async def hears(heard: list[dict[str, Any]], *expected: str, where: str) -> None:
    """Wait until the listener heard exactly ``expected``; a failure says what it heard instead."""
    try:
        await wait_until(has(heard, *expected), what=f"{expected[-1]} on {where}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; heard {statuses(heard)}") from None


@dataclasses.dataclass
class Pair:
    """Two instances serving HTTP on one Redis, and the gates their tool waits on."""

    a: Server
    b: Server
    url_a: str
    url_b: str
    gates: Gates


@contextlib.asynccontextmanager
async def two_instances(store_a: RedisTaskStore, store_b: RedisTaskStore) -> AsyncIterator[Pair]:
    gates = Gates()
    a, b = instance(store_a, gates), instance(store_b, gates)
    try:
        async with serve_http_background(a, port=0) as at_a, serve_http_background(b, port=0) as at_b:
            # Each runner sweeps once when it starts (lazily, at its first use): A's first listen would
            # otherwise sweep B's task, whose 0.3 s lease a loaded machine can let lapse (both run
            # in this one process), and fail it as interrupted. Started now, before any task exists.
            await a.tasks.runner()
            await b.tasks.runner()
            yield Pair(a, b, at_a.url, at_b.url, gates)
    finally:  # the runners, sweepers and relays stop even when the test failed
        await a.tasks.aclose()
        await b.tasks.aclose()


def relay_subscribed(server: Server) -> bool:
    return server.tasks.relay is not None and server.tasks.relay.subscribed.is_set()


async def update(client: Modern, task_id: str, heard: list[dict[str, Any]]) -> None:
    """Answer the task's open question (its key as a listener was told it)."""
    (key,) = heard[-1]["inputRequests"]
    reply = await client.request(
        "tasks/update", {"taskId": task_id, "inputResponses": {key: accept(value=True)}}, envelope=EXT
    )
    assert "error" not in reply.body, reply.body


async def test_a_listener_on_a_hears_a_task_b_answers_and_finishes_exactly_once(
    client: aioredis.Redis, other_client: aioredis.Redis, prefix: str
) -> None:
    async with two_instances(
        RedisTaskStore(client, prefix=prefix), RedisTaskStore(other_client, prefix=prefix)
    ) as pair:
        a, b, gates = pair.a, pair.b, pair.gates
        on_b = Modern(http_wire_for(pair.url_b))
        task_id = (await on_b.call("approve", envelope=EXT)).result["taskId"]  # B runs it
        on_a_heard: list[dict[str, Any]] = []
        on_b_heard: list[dict[str, Any]] = []
        async with anyio.create_task_group() as group:
            group.start_soon(listen, pair.url_a, task_id, on_a_heard)
            group.start_soon(listen, pair.url_b, task_id, on_b_heard)
            await wait_until(lambda: a.tasks.events.watching(task_id) == b.tasks.events.watching(task_id) == 1)
            await wait_until(lambda: relay_subscribed(a) and relay_subscribed(b), what="the relays")
            await anyio.sleep(QUIET)  # B's run renews its lease meanwhile: nothing to tell anyone
            gates.asking.set()
            await hears(on_a_heard, "input_required", where="A")
            await update(on_b, task_id, on_a_heard)  # answered on B, which runs the rest
            await hears(on_a_heard, "input_required", "working", where="A")
            gates.finishing.set()
            await hears(on_a_heard, "input_required", "working", "completed", where="A")
            await anyio.sleep(QUIET)  # a change sent twice would show up by now
            group.cancel_scope.cancel()
    for heard in (on_a_heard, on_b_heard):  # on A through the relay, on B from its runner (and not its relay)
        assert statuses(heard) == ["input_required", "working", "completed"]
        assert heard[-1]["result"]["content"][0]["text"] == "approved"
    assert on_a_heard == on_b_heard  # the same notifications, wherever the client listens


async def test_the_relay_reads_only_watched_tasks_and_resends_no_local_change(
    client: aioredis.Redis, prefix: str
) -> None:
    """One instance: its own changes come back on the feed; the stream still gets each once, and
    a task nobody watches costs the relay no read."""
    relay_reads: list[str] = []

    class CountingStore(RedisTaskStore):
        async def get(self, task_id: str) -> TaskRecord | None:
            relay_reads.append(task_id)
            return await super().get(task_id)

    events = TaskEvents()
    relay = TaskChangeRelay(CountingStore(client, prefix=prefix), events)  # the runner reads through its own
    relaying = asyncio.create_task(relay.run())
    runner = TaskRunner(RedisTaskStore(client, prefix=prefix), FakeTool(), on_change=events.publish)
    try:
        await asyncio.wait_for(relay.subscribed.wait(), 5)
        unwatched = await runner.create("t", {})
        await settle(runner, unwatched.task_id)
        await runner.update(unwatched.task_id, {"q1": yes()})
        await settle(runner, unwatched.task_id)
        watched = await runner.create("t", {}, start=False)
        heard: list[str] = []
        async with events.subscribe([watched.task_id], current={watched.task_id: watched}) as stream:
            runner.start(watched.task_id)
            async for view in stream:
                heard.append(view.status)
                if view.status == "input_required":
                    await runner.update(watched.task_id, {"q1": yes()})
                if view.status == "completed":
                    break
            await runner.wait(watched.task_id)
            await asyncio.sleep(QUIET)  # the feed has brought every write back by now
            assert not stream.waiting()
        assert heard == ["input_required", "working", "completed"]
        assert unwatched.task_id not in relay_reads
        assert watched.task_id in relay_reads  # each write read back, and dropped as already sent
    finally:
        await runner.aclose()
        relaying.cancel()
        await asyncio.gather(relaying, return_exceptions=True)


async def test_the_relay_picks_up_again_after_redis_restarts() -> None:
    with redis_server() as redis_process:
        own_a, own_b = quick_client(redis_process.url), quick_client(redis_process.url)
        try:
            async with two_instances(RedisTaskStore(own_a), RedisTaskStore(own_b)) as pair:
                a, gates = pair.a, pair.gates
                on_b = Modern(http_wire_for(pair.url_b))
                task_id = (await on_b.call("approve", envelope=EXT)).result["taskId"]
                heard: list[dict[str, Any]] = []
                async with anyio.create_task_group() as group:
                    group.start_soon(listen, pair.url_a, task_id, heard)
                    await wait_until(lambda: a.tasks.events.watching(task_id) == 1 and relay_subscribed(a))
                    relay = a.tasks.relay
                    assert relay is not None
                    relay.max_delay = 0.4  # the test's patience, not production's
                    gates.asking.set()
                    await hears(heard, "input_required", where="A")

                    await own_b.save()  # the restart keeps the task (the test Redis does not save by itself)
                    redis_process.stop()
                    await wait_until(lambda: not relay.subscribed.is_set(), what="the relay noticing")
                    redis_process.start()
                    await update(on_b, task_id, heard)  # at once: A's relay may not be back yet
                    gates.finishing.set()
                    await wait_until(lambda: relay.subscribed.is_set(), what="the relay subscribed again")
                    await wait_until(lambda: bool(heard) and heard[-1]["status"] == "completed", what="completed")
                    await anyio.sleep(QUIET)
                    group.cancel_scope.cancel()
                assert relay.subscriptions >= 2
                # the states committed while the relay was away may be folded into the last one
                assert statuses(heard)[0] == "input_required" and statuses(heard)[-1] == "completed"
                assert len(set(statuses(heard))) == len(heard)  # nothing twice
        finally:
            await own_a.aclose()
            await own_b.aclose()


async def test_the_relay_stops_once_its_store_is_closed(client: aioredis.Redis, prefix: str) -> None:
    store = RedisTaskStore(client, prefix=prefix)
    await store.close()
    relay = TaskChangeRelay(store, TaskEvents())
    await asyncio.wait_for(relay.run(), 2)  # returns instead of retrying forever
    assert relay.subscriptions == 0


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_server_whose_store_is_not_shared_starts_no_relay(kind: str, tmp_path: Path) -> None:
    store = InMemoryTaskStore() if kind == "memory" else SQLiteTaskStore(tmp_path / "tasks.db")
    server = Server("alone", task_store=store)
    before = relays()
    await server.tasks.runner()
    try:
        assert server.tasks.relay is None
        assert relays() == before  # no background task, and no subscription to make
    finally:
        await server.tasks.aclose()
        await store.close()


def relays() -> set[asyncio.Task[Any]]:
    return {t for t in asyncio.all_tasks() if t.get_name() == "elicitkit-task-relay" and not t.done()}
