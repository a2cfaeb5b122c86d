"""Task changes fanned out to listen streams: filtered by id, newest state per task, bounded."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from elicitkit.protocol.tasks import task_notification
from elicitkit.server.tasks import InMemoryTaskStore, RecordedAnswer, TaskRecord
from elicitkit.server.tasks.events import TaskEvents
from elicitkit.server.tasks.runner import Finished, NeedsInput, Outcome, Question, TaskRunner

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(10)]


def record(task_id: str, status: str = "working", **changes: Any) -> TaskRecord:
    base = TaskRecord(task_id, "t", {}, status, 1.0, 2.0, 60_000)
    return dataclasses.replace(base, **changes)


async def test_a_stream_gets_only_the_tasks_it_asked_for() -> None:
    events = TaskEvents()
    stream = events.subscribe(["a"])
    events.publish(record("b"))
    events.publish(record("a", status_message="started"))
    view = await asyncio.wait_for(anext(stream), 1)
    assert view.task_id == "a" and view.status_message == "started"
    stream.close()
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_a_slow_stream_keeps_only_the_newest_state_per_task() -> None:
    events = TaskEvents()
    stream = events.subscribe(["a", "b"])
    events.publish(record("a", status_message="1"))
    events.publish(record("b", status_message="1"))
    events.publish(record("a", status="input_required", status_message="2"))
    first, second = await anext(stream), await anext(stream)
    assert (first.task_id, first.status_message) == ("b", "1")  # ordered by the latest change
    assert (second.task_id, second.status, second.status_message) == ("a", "input_required", "2")
    assert not stream.waiting()  # nothing else is held


async def test_every_stream_watching_a_task_gets_it_and_closing_unregisters() -> None:
    events = TaskEvents()
    one, two = events.subscribe(["a"]), events.subscribe(["a", "c"])
    assert events.watching("a") == 2
    events.publish(record("a"))
    assert (await anext(one)).task_id == (await anext(two)).task_id == "a"
    async with one:
        pass
    assert events.watching("a") == 1 and events.watching("c") == 1
    two.close()
    two.close()  # twice is fine
    assert events.watching("a") == events.watching("c") == 0
    events.publish(record("a"))  # nobody listens: nothing happens


async def test_a_waiting_reader_wakes_on_publish_and_on_close() -> None:
    events = TaskEvents()
    stream = events.subscribe(["a"])
    reader = asyncio.create_task(anext(stream))
    await asyncio.sleep(0)
    events.publish(record("a", status="completed", result={"content": []}))
    assert (await asyncio.wait_for(reader, 1)).status == "completed"
    waiting = asyncio.create_task(anext(stream))
    await asyncio.sleep(0)
    stream.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(waiting, 1)


async def test_the_runner_reports_a_task_life_to_its_listeners() -> None:
    events = TaskEvents()

    async def body(tool: str, args: dict[str, Any], answers: Mapping[str, RecordedAnswer]) -> Outcome:
        if "q1" not in answers:
            return NeedsInput((Question("q1", {"method": "elicitation/create", "params": {}}, "fp"),))
        return Finished({"content": [{"type": "text", "text": "done"}]})

    runner = TaskRunner(InMemoryTaskStore(), body, on_change=events.publish)
    created = await runner.create("t", {}, start=False)
    seen: list[str] = []
    async with events.subscribe([created.task_id]) as stream:
        runner.start(created.task_id)
        view = await asyncio.wait_for(anext(stream), 1)
        seen.append(view.status)
        assert task_notification(view, 9)["params"]["inputRequests"] == {
            "q1": {"method": "elicitation/create", "params": {}}
        }
        await runner.update(created.task_id, {"q1": {"action": "accept", "content": {}}})
        async for view in stream:
            seen.append(view.status)
            if view.status == "completed":
                break
    assert seen[0] == "input_required" and seen[-1] == "completed"
    assert events.watching(created.task_id) == 0


# ----------------------------------------------------------------------------- a change reaches a stream once


def pending(stream: Any) -> list[tuple[str, str | None]]:
    return [(view.task_id, view.status_message) for view in stream.waiting()]


async def test_a_change_published_here_and_relayed_back_reaches_a_stream_once() -> None:
    events = TaskEvents()
    stream = events.subscribe(["a"])
    events.publish(record("a", status_message="1", version=2))  # committed here
    events.relay(record("a", status_message="1", version=2))  # the same write, back from the shared store
    assert pending(stream) == [("a", "1")]
    assert (await anext(stream)).status_message == "1"
    events.relay(record("a", status_message="2", version=3))  # relayed first this time
    events.publish(record("a", status_message="2", version=3))  # then the local hook: nothing more
    events.relay(record("a", status_message="1", version=2))  # a late, older read: dropped
    assert pending(stream) == [("a", "2")]


async def test_a_relayed_write_the_wire_does_not_show_is_not_sent() -> None:
    events = TaskEvents()
    stream = events.subscribe(["a"])
    events.publish(record("a", status_message="running", version=1))
    await anext(stream)
    events.relay(record("a", status_message="running", version=2, lease_expires_at=9.0))  # a lease renewal
    events.relay(record("a", status_message="running", version=3, lease_expires_at=12.0))
    assert pending(stream) == []
    events.relay(record("a", status="input_required", status_message="running", version=4))
    assert [v.status for v in stream.waiting()] == ["input_required"]


async def test_a_stream_starts_from_the_records_its_caller_read() -> None:
    events = TaskEvents()
    stream = events.subscribe(["a", "b"], current={"a": record("a", status_message="1", version=5)})
    events.relay(record("a", status_message="1", version=5))  # what the caller read: not a change
    events.relay(record("a", status_message="1", version=6))  # a renewal: not shown either
    events.relay(record("b", status_message="x", version=1))  # no record read for b: any change is news
    assert pending(stream) == [("b", "x")]
    events.publish(record("a", status_message="2", version=7))
    assert pending(stream) == [("b", "x"), ("a", "2")]


async def test_narrowing_drops_ids_and_keeps_what_came_in_meanwhile() -> None:
    events = TaskEvents()
    stream = events.subscribe(["mine", "theirs", "late"])
    events.publish(record("theirs", version=1))
    events.publish(record("late", status_message="old", version=3))  # committed while the caller read
    stream.narrow(
        ["mine", "late"],
        current={"mine": record("mine", version=2), "late": record("late", status_message="new", version=4)},
    )
    assert events.watching("theirs") == 0 and events.watching("mine") == events.watching("late") == 1
    assert pending(stream) == [("late", "new")]  # the newer read replaces the older change
    events.relay(record("mine", version=2))
    assert pending(stream) == [("late", "new")]
    stream.close()
    assert events.watched() == []


async def test_a_renewal_relayed_while_the_listener_reads_is_judged_against_the_read() -> None:
    """The flake seen in test_relay: a lease renewal elsewhere, relayed between the listen stream's
    subscribe and its read, was sent as a change (no starting point to compare it with yet)."""
    now = [100.0]
    events = TaskEvents(clock=lambda: now[0])
    stream = events.subscribe(["renewed", "moved", "early", "answered"], reading=True)  # at 100.0
    events.relay(record("answered", "input_required", updated_at=100.5, version=8))  # committed since: news
    events.relay(record("renewed", status_message="1", version=6))  # a renewal (the read has it)
    events.relay(record("moved", status_message="1", version=3))  # older than the read: folded into it
    events.relay(record("moved", status_message="2", version=5))  # after the read, and shown differently
    events.relay(record("early", status_message="x", version=1))  # nothing read for it: news
    assert pending(stream) == []  # held until the read tells what they show
    stream.narrow(
        ["renewed", "moved", "early", "answered"],
        current={
            "renewed": record("renewed", status_message="1", version=5),
            "moved": record("moved", version=4),
            "answered": record("answered", "input_required", updated_at=100.5, version=8),  # the read has it
        },
    )
    assert sorted(pending(stream)) == [("answered", None), ("early", "x"), ("moved", "2")]
    events.relay(record("renewed", status_message="1", version=7))
    events.relay(record("answered", "input_required", updated_at=100.5, version=9))  # renewed after: not news
    assert sorted(pending(stream)) == [("answered", None), ("early", "x"), ("moved", "2")]
