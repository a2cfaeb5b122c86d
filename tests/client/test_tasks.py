"""The client's side of the Tasks extension against elicitkit's own server: call_tool(task=True)
polls and answers with the same elicitation callback; the hands-off handle; get/answer/cancel."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from elicitkit import Client, Context, Server
from elicitkit.client.tasks import TaskCancelled, TaskHandle
from elicitkit.elicitation.requests import ElicitRequest, FormRequest
from elicitkit.elicitation.results import AcceptedElicitation, ElicitationResult
from elicitkit.errors import LocalProtocolError
from elicitkit.server.tasks import InMemoryTaskStore
from elicitkit.server.tasks.serving import ENV_TASK_DB
from elicitkit.transports.http.serve import serve_http_background

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
TASK_SERVER = Path(__file__).resolve().parents[1] / "server" / "tasks" / "_task_server.py"


class Name(BaseModel):
    name: str


class Age(BaseModel):
    age: int


def build() -> Server:
    server = Server("client-tasks", task_store=InMemoryTaskStore())

    @server.tool(task="optional", task_poll_interval_ms=20)
    async def register(team: str, ctx: Context) -> str:
        who = await ctx.elicit(f"Who joins {team}?", Name)
        age = await ctx.elicit("How old?", Age)
        assert isinstance(who, AcceptedElicitation) and isinstance(age, AcceptedElicitation)
        return f"{who.data.name} ({age.data.age}) joins {team}"

    @server.tool(task="required", ask_before_task=True, task_poll_interval_ms=20)
    async def named(ctx: Context) -> str:
        who = await ctx.elicit("Who?", Name, key="user_name")
        await ctx.run_as_task()
        assert isinstance(who, AcceptedElicitation)
        return f"task for {who.data.name}"

    @server.tool(task="optional", task_poll_interval_ms=20)
    async def sleepy() -> str:
        await anyio.sleep(60)
        return "never"

    return server


class Person:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, FormRequest)
        self.asked.append(request.message)
        if "name" in request.requested_schema["properties"]:
            return ElicitationResult.accept({"name": "Ada"})
        return ElicitationResult.accept({"age": 36})


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    made = build()
    yield made
    await made.tasks.aclose()


async def test_call_tool_as_a_task_answers_with_the_same_callback(server: Server) -> None:
    person = Person()
    async with Client(server, mode="modern", elicitation_callback=person) as client:
        result = await client.call_tool("register", {"team": "blue"}, task=True)
        assert result.text == "Ada (36) joins blue"
        assert person.asked == ["Who joins blue?", "How old?"]  # each question put once
        plain = await client.call_tool("register", {"team": "red"})  # no task: ordinary rounds
        assert plain.text == "Ada (36) joins red"


async def test_questions_before_the_task_then_the_task(server: Server) -> None:
    person = Person()
    async with Client(server, mode="modern", elicitation_callback=person) as client:
        result = await client.call_tool("named", task=True)
    assert result.text == "task for Ada" and person.asked == ["Who?"]


async def test_hands_off_another_client_answers_later_over_http(server: Server) -> None:
    async with serve_http_background(server, port=0) as handle:
        async with Client(handle.url, mode="modern", elicitation_callback=Person()) as first:
            started = await first.start_task("register", {"team": "green"})
            assert isinstance(started, TaskHandle) and started.poll_interval_ms == 20
        person = Person()
        async with Client(handle.url, mode="modern", elicitation_callback=person) as second:
            shown = await second.get_task(started.task_id)
            assert shown["taskId"] == started.task_id
            result = await second.follow_task(started.task_id)
        assert result.text == "Ada (36) joins green"
        async with Client(handle.url, mode="modern") as third:
            slow = await third.start_task("sleepy")
            assert isinstance(slow, TaskHandle)
            await third.cancel_task(slow.task_id)
            with pytest.raises(TaskCancelled):
                await third.follow_task(slow.task_id)


async def test_answer_task_by_hand(server: Server) -> None:
    async with Client(server, mode="modern") as client:
        started = await client.start_task("register", {"team": "x"})
        assert isinstance(started, TaskHandle)
        for _ in range(100):
            task = await client.get_task(started.task_id)
            if task["status"] == "input_required":
                break
            await anyio.sleep(0.01)
        [key] = task["inputRequests"]
        await client.answer_task(started.task_id, {key: {"action": "accept", "content": {"name": "Bo"}}})
        after = await client.get_task(started.task_id)
        assert key not in after.get("inputRequests", {})
        await client.cancel_task(started.task_id)


async def test_a_task_over_stdio(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_TASK_DB, str(tmp_path / "tasks.db"))
    effects = tmp_path / "effects.txt"

    async def yes(request: ElicitRequest) -> ElicitationResult[Any]:
        return ElicitationResult.accept({"approve": True})

    command = [sys.executable, str(TASK_SERVER), "stdio"]
    async with Client(command, mode="modern", elicitation_callback=yes) as client:
        result = await client.call_tool("deploy", {"target": "edge", "effects": str(effects)}, task=True)
    assert result.text == "edge: deployed"
    assert effects.read_text().splitlines() == ["deployed edge=True"]


async def test_start_task_on_a_legacy_client_fails_before_anything_runs(server: Server) -> None:
    """Tasks exist on 2026-07-28 only: the default client (the handshake) must not quietly run
    the tool as a plain call, asking at once and doing its work, where a handle was wanted."""
    person = Person()
    async with Client(server, elicitation_callback=person) as client:  # the default: mode="legacy"
        for attempt in (
            client.start_task("register", {"team": "x"}),
            client.get_task("t1"),
            client.follow_task("t1"),
            client.answer_task("t1", {}),
            client.cancel_task("t1"),
        ):
            with pytest.raises(LocalProtocolError, match=r"tasks exist on 2026-07-28 only.*mode='auto'"):
                await attempt
    assert person.asked == []  # nothing was sent: the tool never ran
