"""examples/tasks/approval.py: a task asks for approval, the server restarts, the answer finishes it;
and with the kit, the same tool on every era and in the task column."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from elicitkit.tasks import InMemoryTaskStore
from elicitkit.testing.kit import Kit, accept, decline

from ._load import load_example

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "approval.py"

pytestmark = pytest.mark.timeout(120)


def test_the_demo_finishes_the_task_after_a_restart() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--demo"], capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "task created: working",
        "waiting for: approval",
        "server stopped; a new one starts on the same file",
        "  asked: Deploy web to production?",
        "result: web: deployed (after the restart)",
    ]


@pytest.mark.elicitkit_eras(tasks=True, transports=("memory", "http"))
async def test_deploy_on_every_era_and_as_a_task(elicitkit: Kit) -> None:
    server = load_example("tasks/approval.py").build_server(InMemoryTaskStore())
    elicitkit.person.will(accept({"approve": True, "note": "go"}), decline())
    async with elicitkit.connect(server) as client:
        first = await elicitkit.call_tool(client, "deploy", {"service": "web"})
        second = await elicitkit.call_tool(client, "deploy", {"service": "db"})
    assert (first.text, second.text) == ("web: deployed (go)", "db: not deployed")
    elicitkit.asked.assert_messages("Deploy web to production?", "Deploy db to production?")
    elicitkit.asked[0].assert_fields("approve", "note")
    assert len(elicitkit.task_ids) == (2 if elicitkit.task else 0)
