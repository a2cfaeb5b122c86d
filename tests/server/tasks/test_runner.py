"""The task engine with fake tool bodies that follow the replay contract of 2026 rounds."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from elicitkit.protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MCPError,
)
from elicitkit.server.tasks import InMemoryTaskStore, RecordedAnswer, SQLiteTaskStore, TaskRecord
from elicitkit.server.tasks.runner import Failed, Finished, NeedsInput, Outcome, Question, TaskRunner, check_response

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


def fingerprint(request: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:22]


def ask(message: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"approve": {"type": "boolean"}}, "required": ["approve"]}
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


class Clock:
    def __init__(self, now: float = 1_795_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeTool:
    """A body that asks its questions in order (or ``together``), validates answers, then acts.

    Like a 2026 handler under replay: fresh answers (fingerprint None) match by key, recorded ones
    only if pinned to the same question; a bad answer is asked again with the reason; everything
    after the last question (the side effect) runs only when all answers are in.
    """

    keys: tuple[str, ...] = ("q1",)
    together: bool = False
    side_effects: list[dict[str, Any]] = field(default_factory=list)
    runs: int = 0
    gate: asyncio.Event | None = None  # when set, the body waits on it before acting

    async def __call__(self, tool: str, arguments: dict[str, Any], answers: Mapping[str, RecordedAnswer]) -> Outcome:
        self.runs += 1
        used: dict[str, RecordedAnswer] = {}
        missing: list[Question] = []
        got: dict[str, Any] = {}
        for key in self.keys:
            request = ask(f"{arguments.get('what', 'go')}? ({key})")
            fp = fingerprint(request)
            answer = answers.get(key)
            if answer is None or answer.fingerprint not in (None, fp):
                missing.append(Question(key, request, fp))
                if not self.together:
                    break
                continue
            content = answer.response.get("content") or {}
            if answer.response.get("action") == "accept" and not isinstance(content.get("approve"), bool):
                again = ask(f"{request['params']['message']} (approve must be true or false)")
                missing.append(Question(key, again, fingerprint(again)))
                if not self.together:
                    break
                continue
            used[key] = RecordedAnswer(answer.response, fp)
            got[key] = content.get("approve")
        if missing:
            return NeedsInput(tuple(missing), used)
        if self.gate is not None:
            await self.gate.wait()
        self.side_effects.append(got)  # the tail: must happen once per task
        return Finished({"content": [{"type": "text", "text": json.dumps(got, sort_keys=True)}], "isError": False})


def yes(approve: Any = True) -> dict[str, Any]:
    return {"action": "accept", "content": {"approve": approve}}


@pytest.fixture
def store() -> InMemoryTaskStore:
    return InMemoryTaskStore()


async def settle(runner: TaskRunner, task_id: str) -> TaskRecord:
    await runner.wait(task_id)
    return await runner.get(task_id)


# ----------------------------------------------------------------------------- the happy paths


async def test_a_task_that_asks_nothing_completes(store: InMemoryTaskStore) -> None:
    changes: list[str] = []
    tool = FakeTool(keys=())
    runner = TaskRunner(store, tool, on_change=lambda r: changes.append(r.status))
    created = await runner.create("t", {})
    assert created.status == "working" and created.version == 1
    assert await store.get(created.task_id) == created  # durable before create returns
    done = await settle(runner, created.task_id)
    assert done.status == "completed"
    assert done.result is not None and done.result["isError"] is False
    assert done.lease_owner is None
    assert changes == ["working", "completed"]
    assert tool.side_effects == [{}]


async def test_a_question_puts_the_task_in_input_required_and_an_answer_finishes_it(store: InMemoryTaskStore) -> None:
    tool = FakeTool()
    runner = TaskRunner(store, tool)
    created = await runner.create("deploy", {"what": "deploy"})
    waiting = await settle(runner, created.task_id)
    assert waiting.status == "input_required"
    shown = await runner.handle("tasks/get", {"taskId": created.task_id}, declared=True)
    assert shown["resultType"] == "complete"
    assert shown["inputRequests"] == {"q1": ask("deploy? (q1)")}
    assert not runner.running(created.task_id)  # a waiting task holds no coroutine

    ack = await runner.handle(
        "tasks/update", {"taskId": created.task_id, "inputResponses": {"q1": yes()}}, declared=True
    )
    assert ack == {"resultType": "complete"}
    done = await settle(runner, created.task_id)
    assert done.status == "completed"
    assert json.loads(done.result["content"][0]["text"]) == {"q1": True}  # type: ignore[index]
    assert tool.side_effects == [{"q1": True}]
    assert tool.runs == 2


async def test_answers_are_pinned_after_a_run_and_replayed_by_fingerprint(store: InMemoryTaskStore) -> None:
    tool = FakeTool(keys=("q1", "q2"))
    runner = TaskRunner(store, tool)
    created = await runner.create("t", {})
    await settle(runner, created.task_id)
    await runner.update(created.task_id, {"q1": yes()})
    second = await settle(runner, created.task_id)
    assert second.status == "input_required" and list(second.open_requests) == ["q2"]
    assert second.answers["q1"].fingerprint == fingerprint(ask("go? (q1)"))  # pinned by the run
    await runner.update(created.task_id, {"q2": yes(False)})
    done = await settle(runner, created.task_id)
    assert tool.side_effects == [{"q1": True, "q2": False}]
    assert done.answers == {}  # a finished task keeps its result, not its answers


# ----------------------------------------------------------------------------- exactly once


async def test_two_concurrent_updates_with_the_last_answer_run_the_tail_once(store: InMemoryTaskStore) -> None:
    tool = FakeTool()
    runner = TaskRunner(store, tool)
    created = await runner.create("t", {})
    await settle(runner, created.task_id)
    await asyncio.gather(runner.update(created.task_id, {"q1": yes()}), runner.update(created.task_id, {"q1": yes()}))
    await settle(runner, created.task_id)
    await runner.update(created.task_id, {"q1": yes()})  # and a late duplicate
    done = await settle(runner, created.task_id)
    assert done.status == "completed"
    assert tool.side_effects == [{"q1": True}]
    assert tool.runs == 2


async def test_two_processes_answering_at_once_run_the_tail_once(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    tool_a, tool_b = FakeTool(), FakeTool()
    async with SQLiteTaskStore(path) as store_a, SQLiteTaskStore(path) as store_b:
        a, b = TaskRunner(store_a, tool_a), TaskRunner(store_b, tool_b)
        created = await a.create("t", {})
        await settle(a, created.task_id)
        await asyncio.gather(a.update(created.task_id, {"q1": yes()}), b.update(created.task_id, {"q1": yes()}))
        await a.wait(created.task_id)
        await b.wait(created.task_id)
        done = await a.get(created.task_id)
        assert done.status == "completed"
        assert len(tool_a.side_effects) + len(tool_b.side_effects) == 1


# ----------------------------------------------------------------------------- partial and bad answers


async def test_partial_answers_keep_the_task_waiting_on_the_rest(store: InMemoryTaskStore) -> None:
    tool = FakeTool(keys=("first", "second"), together=True)
    runner = TaskRunner(store, tool)
    created = await runner.create("multi", {})
    waiting = await settle(runner, created.task_id)
    assert sorted(waiting.open_requests) == ["first", "second"]
    await runner.update(created.task_id, {"first": yes()})
    # no wait: the answer is applied before update returns (the suite reads right after the ack)
    shown = await runner.handle("tasks/get", {"taskId": created.task_id}, declared=True)
    assert shown["status"] == "input_required"
    assert list(shown["inputRequests"]) == ["second"]
    assert not runner.running(created.task_id)
    await runner.update(created.task_id, {"second": yes(False)})
    done = await settle(runner, created.task_id)
    assert done.status == "completed"
    assert tool.side_effects == [{"first": True, "second": False}]
    assert tool.runs == 2


async def test_unknown_and_already_answered_keys_are_ignored(store: InMemoryTaskStore) -> None:
    tool = FakeTool(keys=("a", "b"), together=True)
    runner = TaskRunner(store, tool)
    created = await runner.create("t", {})
    before = await settle(runner, created.task_id)
    ack = await runner.handle(
        "tasks/update", {"taskId": created.task_id, "inputResponses": {"unknown-key": {"ignored": True}}}, declared=True
    )
    assert ack == {"resultType": "complete"}
    assert await runner.get(created.task_id) == before  # nothing was written
    await runner.update(created.task_id, {"a": yes()})
    after_a = await runner.get(created.task_id)
    await runner.update(created.task_id, {"a": yes(False)})  # already answered: ignored
    assert await runner.get(created.task_id) == after_a


async def test_a_malformed_answer_is_asked_again_under_a_new_key(store: InMemoryTaskStore) -> None:
    tool = FakeTool()
    runner = TaskRunner(store, tool)
    created = await runner.create("t", {})
    await settle(runner, created.task_id)
    await runner.update(created.task_id, {"q1": {"action": "maybe"}})
    again = await runner.get(created.task_id)
    assert again.status == "input_required"
    assert list(again.open_requests) == ["q1.2"]  # q1 was answered once: never reused
    assert "not accepted" in again.open_requests["q1.2"].request["params"]["message"]
    assert again.status_message is not None and "q1.2" in again.status_message
    assert tool.runs == 1  # re-asked at once, without running the body
    await runner.update(created.task_id, {"q1": yes()})  # the old key is gone: ignored
    assert (await runner.get(created.task_id)).status == "input_required"
    await runner.update(created.task_id, {"q1.2": yes()})
    done = await settle(runner, created.task_id)
    assert done.status == "completed" and tool.side_effects == [{"q1": True}]


async def test_an_answer_the_body_rejects_is_asked_again_with_the_reason(store: InMemoryTaskStore) -> None:
    tool = FakeTool()
    runner = TaskRunner(store, tool)
    created = await runner.create("t", {})
    await settle(runner, created.task_id)
    await runner.update(created.task_id, {"q1": yes("sure")})  # passes the screen, fails the body's validator
    again = await settle(runner, created.task_id)
    assert again.status == "input_required"
    assert list(again.open_requests) == ["q1.2"]
    assert "approve must be true or false" in again.open_requests["q1.2"].request["params"]["message"]
    assert "q1" not in again.answers  # the refused answer is not kept
    assert tool.side_effects == []
    await runner.update(created.task_id, {"q1.2": yes()})
    done = await settle(runner, created.task_id)
    assert done.status == "completed" and tool.side_effects == [{"q1": True}]


def test_check_response() -> None:
    request = ask("ok?")
    assert check_response(request, yes()) is None
    assert check_response(request, {"action": "decline"}) is None
    assert check_response(request, {"action": "nope"}) is not None
    assert check_response(request, {"action": "accept", "content": [1]}) is not None
    assert check_response({"method": "sampling/createMessage"}, {"anything": 1}) is None


# ----------------------------------------------------------------------------- cancel, failure


async def test_cancel_while_waiting(store: InMemoryTaskStore) -> None:
    tool = FakeTool()
    runner = TaskRunner(store, tool)
    created = await runner.create("t", {})
    await settle(runner, created.task_id)
    ack = await runner.handle("tasks/cancel", {"taskId": created.task_id}, declared=True)
    assert ack == {"resultType": "complete"}
    cancelled = await runner.get(created.task_id)
    assert cancelled.status == "cancelled" and cancelled.open_requests == {}
    await runner.update(created.task_id, {"q1": yes()})  # too late: ignored
    await runner.cancel(created.task_id)  # idempotent
    assert await runner.get(created.task_id) == cancelled
    assert tool.side_effects == [] and tool.runs == 1
    shown = await runner.handle("tasks/get", {"taskId": created.task_id}, declared=True)
    assert shown["status"] == "cancelled" and "inputRequests" not in shown


async def test_cancel_while_running_stops_the_body_and_drops_its_outcome(store: InMemoryTaskStore) -> None:
    tool = FakeTool(keys=(), gate=asyncio.Event())
    runner = TaskRunner(store, tool)
    created = await runner.create("slow", {})
    await asyncio.sleep(0.01)
    assert runner.running(created.task_id)
    await runner.cancel(created.task_id)
    tool.gate.set()  # type: ignore[union-attr]
    done = await settle(runner, created.task_id)
    assert done.status == "cancelled"
    assert tool.side_effects == []
    assert not runner.running(created.task_id)


async def test_cancel_from_another_process_is_noticed_at_the_next_heartbeat(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    tool = FakeTool(keys=(), gate=asyncio.Event())
    async with SQLiteTaskStore(path) as store_a, SQLiteTaskStore(path) as store_b:
        a = TaskRunner(store_a, tool, lease=0.1)
        b = TaskRunner(store_b, FakeTool())
        created = await a.create("slow", {})
        await asyncio.sleep(0.02)
        await b.cancel(created.task_id)
        await asyncio.wait_for(a.wait(created.task_id), 5)
        assert not a.running(created.task_id)
        assert (await a.get(created.task_id)).status == "cancelled"
        assert tool.side_effects == []


async def test_failures(store: InMemoryTaskStore) -> None:
    async def protocol_error(tool: str, args: dict[str, Any], answers: Mapping[str, RecordedAnswer]) -> Outcome:
        raise MCPError(INTERNAL_ERROR, "rate limit exceeded")

    async def explicit(tool: str, args: dict[str, Any], answers: Mapping[str, RecordedAnswer]) -> Outcome:
        return Failed({"code": -32000, "message": "upstream down"}, "upstream down")

    async def crash(tool: str, args: dict[str, Any], answers: Mapping[str, RecordedAnswer]) -> Outcome:
        raise RuntimeError("secret detail")

    for body, code in ((protocol_error, INTERNAL_ERROR), (explicit, -32000), (crash, INTERNAL_ERROR)):
        runner = TaskRunner(store, body)
        created = await runner.create("t", {})
        failed = await settle(runner, created.task_id)
        assert failed.status == "failed"
        assert failed.error is not None and failed.error["code"] == code
        shown = await runner.handle("tasks/get", {"taskId": created.task_id}, declared=True)
        assert "result" not in shown and shown["error"]["code"] == code
        assert "secret detail" not in json.dumps(shown)


# ----------------------------------------------------------------------------- lookup, expiry, gates


async def test_unknown_or_foreign_tasks_are_invalid_params(store: InMemoryTaskStore) -> None:
    runner = TaskRunner(store, FakeTool())
    created = await runner.create("t", {}, owner="alice")
    await runner.wait(created.task_id)
    for call in (
        runner.get("nope"),
        runner.get(created.task_id, owner="mallory"),
        runner.get(created.task_id),
        runner.update(created.task_id, {"q1": yes()}, owner="mallory"),
        runner.cancel(created.task_id, owner="mallory"),
    ):
        with pytest.raises(MCPError) as info:
            await call
        assert info.value.code == INVALID_PARAMS
    assert (await runner.get(created.task_id, owner="alice")).status == "input_required"


async def test_ttl_expiry(store: InMemoryTaskStore) -> None:
    clock = Clock()
    runner = TaskRunner(store, FakeTool(), clock=clock, ttl_ms=60_000)
    kept = await runner.create("t", {}, ttl_ms=None)
    short = await runner.create("t", {})
    await runner.wait(short.task_id)
    await runner.wait(kept.task_id)
    clock.now += 59.9
    assert (await runner.get(short.task_id)).status == "input_required"  # never before its TTL
    clock.now += 0.2
    with pytest.raises(MCPError) as info:
        await runner.get(short.task_id)
    assert info.value.code == INVALID_PARAMS
    assert await store.get(short.task_id) is None  # purged on sight
    other = await runner.create("t", {}, ttl_ms=1000)
    await runner.wait(other.task_id)
    clock.now += 5
    assert await runner.sweep() == (1, 0)
    assert await store.get(other.task_id) is None
    assert (await runner.get(kept.task_id)).status == "input_required"


async def test_handle_gates_and_removed_methods(store: InMemoryTaskStore) -> None:
    runner = TaskRunner(store, FakeTool())
    for method, params in (
        ("tasks/get", {"taskId": "gate-test"}),
        ("tasks/update", {"taskId": "gate-test", "inputResponses": {}}),
        ("tasks/cancel", {"taskId": "gate-test"}),
    ):
        with pytest.raises(MCPError) as info:
            await runner.handle(method, params, declared=False)
        assert info.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY
        assert info.value.data == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
    for removed in ("tasks/result", "tasks/list"):
        with pytest.raises(MCPError) as info:
            await runner.handle(removed, {"taskId": "x"}, declared=True)
        assert info.value.code == METHOD_NOT_FOUND
    with pytest.raises(MCPError) as info:
        await runner.handle("tasks/get", {"taskId": "tasks-conformance-nonexistent-12345"}, declared=True)
    assert info.value.code == INVALID_PARAMS
    with pytest.raises(MCPError) as info:
        await runner.handle("tasks/update", {"taskId": "x", "inputResponses": {"q1": 5}}, declared=True)
    assert info.value.code == INVALID_PARAMS


async def test_create_result_shape(store: InMemoryTaskStore) -> None:
    from elicitkit.protocol.tasks import create_task_result

    runner = TaskRunner(store, FakeTool(), poll_interval_ms=250)
    created = await runner.create("t", {})
    shape = create_task_result(created.view())
    assert shape["resultType"] == "task" and shape["taskId"] == created.task_id
    assert shape["ttlMs"] == 3_600_000 and shape["pollIntervalMs"] == 250
    await runner.wait(created.task_id)


# ----------------------------------------------------------------------------- restarts and leases


async def test_a_waiting_task_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    first_tool = FakeTool()
    async with SQLiteTaskStore(path) as store:
        first = TaskRunner(store, first_tool)
        created = await first.create("deploy", {"what": "deploy"})
        await settle(first, created.task_id)
        await first.aclose()
    second_tool = FakeTool()
    async with SQLiteTaskStore(path) as store:
        second = TaskRunner(store, second_tool)
        shown = await second.handle("tasks/get", {"taskId": created.task_id}, declared=True)
        assert shown["status"] == "input_required" and shown["inputRequests"] == {"q1": ask("deploy? (q1)")}
        await second.handle("tasks/update", {"taskId": created.task_id, "inputResponses": {"q1": yes()}}, declared=True)
        done = await settle(second, created.task_id)
        assert done.status == "completed"
    assert first_tool.side_effects == [] and second_tool.side_effects == [{"q1": True}]


async def test_a_run_interrupted_by_a_dead_process_fails_by_default(store: InMemoryTaskStore) -> None:
    clock = Clock()
    tool = FakeTool(keys=(), gate=asyncio.Event())
    dead = TaskRunner(store, tool, clock=clock, lease=30)
    created = await dead.create("t", {})
    await asyncio.sleep(0.01)
    await dead.aclose()  # the process is gone; its lease is still in the record
    survivor = TaskRunner(store, FakeTool(keys=()), clock=clock)
    assert await survivor.sweep() == (0, 0)  # the lease has not lapsed yet
    clock.now += 31
    assert await survivor.sweep() == (0, 1)
    failed = await survivor.get(created.task_id)
    assert failed.status == "failed" and failed.error is not None
    assert "interrupted" in (failed.status_message or "")
    assert tool.side_effects == []


async def test_an_interrupted_idempotent_task_runs_again(store: InMemoryTaskStore) -> None:
    clock = Clock()
    dead = TaskRunner(store, FakeTool(keys=(), gate=asyncio.Event()), clock=clock)
    created = await dead.create("t", {})
    await asyncio.sleep(0.01)
    await dead.aclose()
    clock.now += 31
    tool = FakeTool(keys=())
    survivor = TaskRunner(store, tool, clock=clock, on_interrupted="rerun")
    assert await survivor.sweep() == (0, 1)
    done = await settle(survivor, created.task_id)
    assert done.status == "completed" and tool.side_effects == [{}]


async def test_a_long_run_renews_its_lease(store: InMemoryTaskStore) -> None:
    gate = asyncio.Event()
    tool = FakeTool(keys=(), gate=gate)
    runner = TaskRunner(store, tool, lease=0.06)
    created = await runner.create("slow", {})
    first_lease = created.lease_expires_at
    await asyncio.sleep(0.15)
    during = await runner.get(created.task_id)
    assert during.status == "working" and during.lease_expires_at is not None
    assert first_lease is not None and during.lease_expires_at > first_lease
    assert await runner.sweep() == (0, 0)  # ours and alive
    gate.set()
    assert (await settle(runner, created.task_id)).status == "completed"


async def test_answers_gathered_before_the_task_are_not_asked_again(store: InMemoryTaskStore) -> None:
    tool = FakeTool()
    runner = TaskRunner(store, tool)
    pinned = {"q1": RecordedAnswer(yes(), fingerprint(ask("go? (q1)")))}
    created = await runner.create("t", {}, answers=pinned)
    done = await settle(runner, created.task_id)
    assert done.status == "completed" and tool.runs == 1
    assert tool.side_effects == [{"q1": True}]


async def test_needs_input_without_questions_fails_the_task(store: InMemoryTaskStore) -> None:
    async def confused(tool: str, args: dict[str, Any], answers: Mapping[str, RecordedAnswer]) -> Outcome:
        return NeedsInput(())

    runner = TaskRunner(store, confused)
    created = await runner.create("t", {})
    failed = await settle(runner, created.task_id)
    assert failed.status == "failed" and failed.error is not None and failed.error["code"] == INTERNAL_ERROR


async def test_an_update_racing_the_end_of_a_run_still_starts_the_next_run(store: InMemoryTaskStore) -> None:
    # the run that asked q2 has committed but its done callback has not run yet when q2 is answered
    tool = FakeTool(keys=("q1", "q2"))
    asked_q2 = asyncio.Event()
    runner = TaskRunner(store, tool, on_change=lambda r: asked_q2.set() if "q2" in r.open_requests else None)
    created = await runner.create("t", {})
    await settle(runner, created.task_id)
    await runner.update(created.task_id, {"q1": yes()})
    run = runner._runs[created.task_id]
    await asked_q2.wait()  # wakes before the finished run's done callback
    assert run.done() and created.task_id in runner._runs
    await runner.update(created.task_id, {"q2": yes()})
    done = await settle(runner, created.task_id)
    assert done.status == "completed" and tool.side_effects == [{"q1": True, "q2": True}]


async def test_durations_are_checked_up_front(store: InMemoryTaskStore) -> None:
    for bad in ({"ttl_ms": 0}, {"poll_interval_ms": 1.5}, {"lease": 0}):
        with pytest.raises(ValueError):
            TaskRunner(store, FakeTool(), **bad)
    runner = TaskRunner(store, FakeTool())
    with pytest.raises(ValueError):
        await runner.create("t", {}, ttl_ms=-1)
    assert len(store) == 0


async def test_a_task_created_without_starting_runs_on_start(store: InMemoryTaskStore) -> None:
    tool = FakeTool(keys=())
    runner = TaskRunner(store, tool)
    created = await runner.create("t", {}, start=False)
    assert not runner.running(created.task_id) and tool.runs == 0
    runner.start(created.task_id)
    assert (await settle(runner, created.task_id)).status == "completed"
    runner.start(created.task_id)  # finished: nothing to run
    await runner.wait(created.task_id)
    assert tool.runs == 1


async def test_cancelling_a_waiter_cancels_the_waiter_not_the_run(store: InMemoryTaskStore) -> None:
    gate = asyncio.Event()
    tool = FakeTool(keys=(), gate=gate)
    runner = TaskRunner(store, tool)
    created = await runner.create("slow", {})
    waiter = asyncio.create_task(runner.wait(created.task_id))
    await asyncio.sleep(0.01)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert runner.running(created.task_id)
    gate.set()
    assert (await settle(runner, created.task_id)).status == "completed"


async def test_aclose_stops_runs_and_leaves_them_for_sweep(store: InMemoryTaskStore) -> None:
    tool = FakeTool(keys=(), gate=asyncio.Event())
    runner = TaskRunner(store, tool)
    created = await runner.create("slow", {})
    await asyncio.sleep(0.01)
    await runner.aclose()
    assert not runner.running(created.task_id)
    left = await runner.get(created.task_id)
    assert left.status == "working" and left.lease_owner == runner.runner_id
    assert tool.side_effects == []
