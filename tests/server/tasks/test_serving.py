"""The Tasks extension wired into the server: run_once over the rounds, the tools/call branch,
tasks/get|update|cancel, negotiation and the routing header, all over raw 2026 requests."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

from elicitkit.elicitation.results import AcceptedElicitation
from elicitkit.protocol.errors import MCPError
from elicitkit.protocol.modern import NAME_PARAM
from elicitkit.protocol.tasks import EXTENSION_ID
from elicitkit.protocol.tasks import NAME_PARAM as TASK_NAME_PARAM
from elicitkit.server import Context, Server
from elicitkit.server.tasks import InMemoryTaskStore, RecordedAnswer
from elicitkit.server.tasks.run import make_run_once
from elicitkit.server.tasks.runner import Failed, Finished, NeedsInput
from elicitkit.server.tasks.serving import ENV_TASK_DB, default_task_db
from elicitkit.server.tools import ToolError
from kit.raw import ALL_CAPS, Modern, accept, http_wire, memory_wire, meta

pytestmark = pytest.mark.anyio

EXT_CAPS: dict[str, Any] = {**ALL_CAPS, "extensions": {EXTENSION_ID: {}}}
EXT = meta(caps=EXT_CAPS)
SIDE_EFFECTS: list[str] = []


class Name(BaseModel):
    name: str


class Age(BaseModel):
    age: int


def build() -> Server:
    server = Server("tasks-test", task_store=InMemoryTaskStore())

    @server.tool()
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.tool(task="optional", task_poll_interval_ms=50)
    async def two_questions(ctx: Context) -> str:
        first = await ctx.elicit("Name?", Name)
        second = await ctx.elicit("Age?", Age)
        assert isinstance(first, AcceptedElicitation) and isinstance(second, AcceptedElicitation)
        SIDE_EFFECTS.append(first.data.name)  # after the last question: must run once
        return f"{first.data.name} is {second.data.age}"

    @server.tool(task="required")
    async def must_be_task() -> str:
        return "done"

    @server.tool(task="optional")
    async def sleepy(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "slept"

    @server.tool(task="optional")
    async def broken() -> str:
        raise ToolError("it broke")

    @server.tool(task="optional")
    async def protocol_broken() -> str:
        raise MCPError(-32603, "internal trouble")

    @server.tool(task="optional", task_ttl_ms=150)
    async def short_lived() -> str:
        return "gone soon"

    @server.tool(task="optional", task_rerun_on_restart=True)
    async def idempotent() -> str:
        return "ran again"

    @server.tool(task="required", ask_before_task=True)
    async def named_then_task(ctx: Context) -> str:
        who = await ctx.elicit("Who?", Name, key="user_name")
        await ctx.run_as_task()
        assert isinstance(who, AcceptedElicitation)
        return f"Hello {who.data.name} from the task"

    return server


@pytest.fixture
async def client() -> AsyncIterator[Modern]:
    SIDE_EFFECTS.clear()
    server = build()
    async with memory_wire(server) as wire:
        yield Modern(wire)
    await server.tasks.aclose()


async def settle(client: Modern, task_id: str, *, until: frozenset[str]) -> dict[str, Any]:
    for _ in range(200):
        task = (await client.request("tasks/get", {"taskId": task_id}, envelope=EXT)).result
        if task["status"] in until:
            return task
        await asyncio.sleep(0.02)
    raise AssertionError(f"task {task_id} never reached {until}: {task}")


TERMINAL = frozenset({"completed", "failed", "cancelled"})
WAITING = frozenset({"input_required"})


# ----------------------------------------------------------------------------- run_once


async def test_run_once_asks_replays_and_finishes() -> None:
    SIDE_EFFECTS.clear()
    server = build()
    run_once = make_run_once(server, server.create_detached_session())
    first = await run_once("two_questions", {}, {})
    assert isinstance(first, NeedsInput) and [q.key for q in first.questions] == ["q1"]
    assert first.questions[0].request["method"] == "elicitation/create"
    second = await run_once("two_questions", {}, {"q1": RecordedAnswer(accept(name="Ada"), None)})
    assert isinstance(second, NeedsInput) and [q.key for q in second.questions] == ["q2"]
    pinned = second.answers_used["q1"]
    assert pinned.fingerprint == first.questions[0].fingerprint  # the fresh answer got pinned
    done = await run_once("two_questions", {}, {**second.answers_used, "q2": RecordedAnswer(accept(age=36), None)})
    assert isinstance(done, Finished) and done.result["content"][0]["text"] == "Ada is 36"
    assert SIDE_EFFECTS == ["Ada"]


async def test_run_once_ignores_a_pinned_answer_to_another_question() -> None:
    server = build()
    run_once = make_run_once(server, server.create_detached_session())
    stale = await run_once("two_questions", {}, {"q1": RecordedAnswer(accept(name="Ada"), "not-this-question")})
    assert isinstance(stale, NeedsInput) and [q.key for q in stale.questions] == ["q1"]


async def test_run_once_reasks_a_bad_answer_and_reports_tool_and_protocol_errors() -> None:
    server = build()
    run_once = make_run_once(server, server.create_detached_session())
    bad = await run_once("two_questions", {}, {"q1": RecordedAnswer(accept(nom="x"), None)})
    assert isinstance(bad, NeedsInput) and bad.questions[0].key == "q1"
    assert "not accepted" in bad.questions[0].request["params"]["message"]
    assert "q1" not in bad.answers_used
    tool_error = await run_once("broken", {}, {})
    assert isinstance(tool_error, Finished) and tool_error.result["isError"] is True
    with pytest.raises(MCPError):
        await run_once("protocol_broken", {}, {})
    assert isinstance(await run_once("nope", {}, {}), Failed)


# ----------------------------------------------------------------------------- the wire


async def test_discover_advertises_the_extension_only_with_a_task_tool(client: Modern) -> None:
    caps = (await client.request("server/discover", {}, envelope=EXT)).result["capabilities"]
    assert caps["extensions"] == {EXTENSION_ID: {}}
    assert "tasks" not in caps
    plain = Server("plain")
    assert "extensions" not in plain.modern_capabilities()


async def test_a_task_asks_is_answered_and_completes(client: Modern) -> None:
    created = (await client.call("two_questions", envelope=EXT)).result
    assert created["resultType"] == "task" and created["pollIntervalMs"] == 50
    assert "requestState" not in created and "inputRequests" not in created
    task_id = created["taskId"]
    waiting = await settle(client, task_id, until=WAITING)
    assert list(waiting["inputRequests"]) == ["q1"]
    ack = (
        await client.request(
            "tasks/update", {"taskId": task_id, "inputResponses": {"q1": accept(name="Bo")}}, envelope=EXT
        )
    ).result
    assert ack["resultType"] == "complete" and "taskId" not in ack
    waiting = await settle(client, task_id, until=WAITING)
    assert list(waiting["inputRequests"]) == ["q2"]
    await client.request("tasks/update", {"taskId": task_id, "inputResponses": {"q2": accept(age=7)}}, envelope=EXT)
    done = await settle(client, task_id, until=TERMINAL)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "Bo is 7"
    assert SIDE_EFFECTS == ["Bo"]
    # the same update again changes nothing and the tail does not run again
    await client.request("tasks/update", {"taskId": task_id, "inputResponses": {"q2": accept(age=7)}}, envelope=EXT)
    assert SIDE_EFFECTS == ["Bo"]


async def test_without_the_extension_calls_are_plain_and_tasks_methods_are_gated(client: Modern) -> None:
    plain = (await client.call("sleepy", {"seconds": 0})).result
    assert plain["resultType"] == "complete" and "taskId" not in plain
    required = (await client.call("must_be_task")).error
    assert required["code"] == -32021 and EXTENSION_ID in required["data"]["requiredCapabilities"]["extensions"]
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        params: dict[str, Any] = {"taskId": "gate-test"}
        if method == "tasks/update":
            params["inputResponses"] = {}
        assert (await client.request(method, params)).error["code"] == -32021
    never = (await client.call("greet", {"name": "x"}, envelope=EXT)).result
    assert never["resultType"] == "complete" and never["content"][0]["text"] == "Hello, x!"
    for removed in ("tasks/result", "tasks/list"):
        assert (await client.request(removed, {"taskId": "x"}, envelope=EXT)).error["code"] == -32601
    missing = (await client.request("tasks/get", {"taskId": "no-such-task"}, envelope=EXT)).error
    assert missing["code"] == -32602


async def test_tool_errors_complete_protocol_errors_fail_and_cancel_stops(client: Modern) -> None:
    broken = (await client.call("broken", envelope=EXT)).result["taskId"]
    done = await settle(client, broken, until=TERMINAL)
    assert done["status"] == "completed" and done["result"]["isError"] is True
    failed = (await client.call("protocol_broken", envelope=EXT)).result["taskId"]
    done = await settle(client, failed, until=TERMINAL)
    assert done["status"] == "failed" and done["error"]["code"] == -32603 and "result" not in done
    slow = (await client.call("sleepy", {"seconds": 60}, envelope=EXT)).result["taskId"]
    ack = (await client.request("tasks/cancel", {"taskId": slow}, envelope=EXT)).result
    assert ack == {"resultType": "complete", **({"_meta": ack["_meta"]} if "_meta" in ack else {})}
    assert (await settle(client, slow, until=TERMINAL))["status"] == "cancelled"
    again = (await client.request("tasks/cancel", {"taskId": slow}, envelope=EXT)).result
    assert again["resultType"] == "complete"


async def test_questions_before_the_task_are_answered_in_the_call(client: Modern) -> None:
    first = (await client.call("named_then_task", envelope=EXT)).result
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["user_name"]
    second = (
        await client.call(
            "named_then_task",
            responses={"user_name": accept(name="Alice")},
            state=first["requestState"],
            envelope=EXT,
        )
    ).result
    assert second["resultType"] == "task" and "requestState" not in second and "inputRequests" not in second
    done = await settle(client, second["taskId"], until=TERMINAL)
    assert done["status"] == "completed" and "Alice" in done["result"]["content"][0]["text"]


async def test_the_task_name_header_is_checked_over_http() -> None:
    assert {k: NAME_PARAM[k] for k in TASK_NAME_PARAM} == dict(TASK_NAME_PARAM)
    server = build()
    async with http_wire(server) as wire:
        client = Modern(wire)
        task_id = (await client.call("sleepy", {"seconds": 60}, envelope=EXT)).result["taskId"]
        good = await client.request("tasks/get", {"taskId": task_id}, envelope=EXT)
        assert good.result["taskId"] == task_id
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tasks/get", "Mcp-Name": "someone-else"}
        bad = await client.request("tasks/get", {"taskId": task_id}, envelope=EXT, headers=headers)
        assert bad.status == 400 and bad.error["code"] == -32020
        await client.request("tasks/cancel", {"taskId": task_id}, envelope=EXT)
    await server.tasks.aclose()


async def test_cancel_while_waiting_and_a_bad_answer_is_asked_again_under_a_new_key(client: Modern) -> None:
    task_id = (await client.call("two_questions", envelope=EXT)).result["taskId"]
    await settle(client, task_id, until=WAITING)
    # the structural check fails at once (no action): asked again as q1.2, the old key is gone
    await client.request("tasks/update", {"taskId": task_id, "inputResponses": {"q1": {"content": {}}}}, envelope=EXT)
    waiting = await settle(client, task_id, until=WAITING)
    assert list(waiting["inputRequests"]) == ["q1.2"]
    # the tool's own validator refuses the answer on replay: asked again with the reason
    bad = {"q1.2": accept(nom="x")}
    await client.request("tasks/update", {"taskId": task_id, "inputResponses": bad}, envelope=EXT)
    for _ in range(100):
        waiting = await settle(client, task_id, until=WAITING)
        if "q1.2" not in waiting["inputRequests"]:
            break
        await asyncio.sleep(0.02)
    [key] = waiting["inputRequests"]
    assert key == "q1.3" and "not accepted" in waiting["inputRequests"][key]["params"]["message"]
    await client.request("tasks/cancel", {"taskId": task_id}, envelope=EXT)
    cancelled = (await client.request("tasks/get", {"taskId": task_id}, envelope=EXT)).result
    assert cancelled["status"] == "cancelled" and "inputRequests" not in cancelled
    assert SIDE_EFFECTS == []


async def test_a_task_expires_after_its_ttl(client: Modern) -> None:
    created = (await client.call("short_lived", envelope=EXT)).result
    assert created["ttlMs"] == 150
    await settle(client, created["taskId"], until=TERMINAL)
    await asyncio.sleep(0.25)
    gone = (await client.request("tasks/get", {"taskId": created["taskId"]}, envelope=EXT)).error
    assert gone["code"] == -32602


async def test_a_task_and_a_plain_call_of_the_same_tool_side_by_side(client: Modern) -> None:
    task_id = (await client.call("two_questions", envelope=EXT)).result["taskId"]
    plain = (await client.call("two_questions")).result
    assert plain["resultType"] == "input_required" and "taskId" not in plain
    done = (await client.call("two_questions", responses={"q1": accept(name="Cy")}, state=plain["requestState"])).result
    state = done["requestState"]
    done = (await client.call("two_questions", responses={"q2": accept(age=3)}, state=state)).result
    assert done["resultType"] == "complete" and done["content"][0]["text"] == "Cy is 3"
    waiting = await settle(client, task_id, until=WAITING)
    assert list(waiting["inputRequests"]) == ["q1"]


async def test_a_handshake_session_never_sees_tasks() -> None:
    server = build()
    async with memory_wire(server) as wire:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"extensions": {EXTENSION_ID: {}}},
                "clientInfo": {"name": "old", "version": "0"},
            },
        }
        caps = (await wire.send(init)).result["capabilities"]
        assert "tasks" not in caps and "extensions" not in caps
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "must_be_task", "arguments": {}}}
        assert (await wire.send(call)).result["content"][0]["text"] == "done"  # runs as an ordinary call
        get = {"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"taskId": "x"}}
        assert (await wire.send(get)).error["code"] == -32601
    await server.tasks.aclose()


async def test_a_run_that_died_reruns_only_for_tools_that_allow_it() -> None:
    server = build()
    runner = await server.tasks.runner()
    stale = []
    for tool in ("idempotent", "sleepy"):
        record = await runner.create(tool, {"seconds": 0} if tool == "sleepy" else {}, start=False)
        # as if its process had died mid-run: another runner's lease, lapsed
        dead = dataclasses.replace(record, lease_owner="a-dead-process", lease_expires_at=0.0)
        stale.append(await runner.store.replace(dead, expected_version=record.version))
    assert all(stale)
    await runner.sweep()
    rerun, failed = (r.task_id for r in stale if r is not None)
    await runner.wait(rerun)
    assert (await runner.get(rerun)).result == {"content": [{"type": "text", "text": "ran again"}]}
    assert (await runner.get(failed)).status == "failed"
    await server.tasks.aclose()


def test_the_default_task_db_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv(ENV_TASK_DB, str(tmp_path / "x.db"))
    assert default_task_db("any") == tmp_path / "x.db"
    monkeypatch.delenv(ENV_TASK_DB)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_task_db("my server/1") == tmp_path / "elicitkit" / "my_server_1" / "tasks.db"


async def test_closing_stops_background_work_that_loses_a_cancel_and_keeps_the_callers_own() -> None:
    """redis-py can lose a cancel on Python 3.11 (see elicitkit.runtime.stopping): the relay that
    reads its pub/sub then runs on. aclose cancels until it has ended; it used to await it once,
    forever, and swallowed a cancel of its own caller on the way."""
    from elicitkit.runtime.stopping import stop_tasks
    from runtime.test_stopping import loses_cancels

    server = Server("closing", task_store=InMemoryTaskStore())
    seen: list[int] = []
    server.tasks._relaying = asyncio.create_task(loses_cancels(2, seen))
    await asyncio.sleep(0)
    await asyncio.wait_for(server.tasks.aclose(), 5)
    assert len(seen) == 3 and server.tasks._relaying is None

    stubborn: list[int] = []
    budget = [-1]
    server.tasks._relaying = relaying = asyncio.create_task(loses_cancels(budget, stubborn))
    await asyncio.sleep(0)
    closing = asyncio.create_task(server.tasks.aclose())
    await asyncio.sleep(0.3)
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing  # the caller's cancel is not swallowed
    assert not relaying.done() and len(stubborn) >= 2
    budget[0] = 0
    await stop_tasks([relaying])
    assert relaying.cancelled()
