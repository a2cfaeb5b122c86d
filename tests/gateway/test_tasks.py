"""Tasks for hosts: a host that declares the Tasks extension (2026-07-28) gets a task of the
gateway's own for a backend's tool (``tasks = "optional"``), run by the server's task support;
the backend's questions wait in the task's record and reach the host through ``tasks/get`` /
``tasks/update``, on a 2025 backend as on a 2026 one. A host without tasks gets a plain call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from elicitkit import Client
from elicitkit.client.tasks import TaskHandle
from elicitkit.gateway import Gateway, parse_config
from elicitkit.server.tasks.store import InMemoryTaskStore

from .support import Person, backends

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
async def gateway(state: Path) -> AsyncIterator[Gateway]:
    found = backends(official=False)
    for backend in found:
        backend["tasks"] = "optional"
    found.append({**found[0], "name": "plain", "namespace": "plain.", "tasks": "never"})
    config = parse_config({"name": "gw", "backends": found})
    async with Gateway(config, task_store=InMemoryTaskStore()).running() as running:
        yield running


@pytest.mark.parametrize("backend", ["old", "new"])
async def test_a_host_with_tasks_gets_a_task_and_answers_its_questions(
    gateway: Gateway, state: Path, backend: str
) -> None:
    person = Person()
    async with Client(gateway, mode="modern", elicitation_callback=person) as host:
        handle = await host.start_task(f"{backend}.two_questions", {"mark": f"task-{backend}"})
        assert isinstance(handle, TaskHandle), handle  # a task of the gateway's, at once
        seen = await host.get_task(handle.task_id)
        assert seen["status"] in ("working", "input_required"), seen
        result = await host.follow_task(handle.task_id)
    assert result.text == "Ada, then Ada", result.text
    assert person.forms() == ["Who is booking?", "Who pays?"]
    # each run of the task calls the backend again with the answers so far (the replay contract):
    # the first run stops at the first question, the second at the second, the third finishes;
    # a 2026 backend also replays each of its own rounds within a run (1 + 2 + 3 runs of its body)
    assert (state / f"runs-task-{backend}").read_text() == {"old": "3", "new": "6"}[backend]


async def test_a_task_belongs_to_its_host_and_tools_without_tasks_stay_plain(gateway: Gateway) -> None:
    async with Client(gateway, mode="modern", elicitation_callback=Person()) as host:
        plain = await host.start_task("plain.book")
        assert not isinstance(plain, TaskHandle) and plain.text == "booked 3 for Ada"
    async with Client(gateway, elicitation_callback=Person()) as legacy:  # 2025-11-25: no tasks there
        assert (await legacy.call_tool("old.book")).text == "booked 3 for Ada"
