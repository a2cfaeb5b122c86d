"""Tasks kept in SQLite outlive a SIGKILLed process, and a killed tail is not run twice."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from elicitkit.server.tasks import SQLiteTaskStore
from elicitkit.server.tasks.runner import TaskRunner

from ._approval import LEASE, QUESTION, approve

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
SERVER = Path(__file__).with_name("_approval.py")


async def _start(*args: str) -> tuple[asyncio.subprocess.Process, str]:
    """Start a task "server" process and read the line it prints once its work is stored."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(SERVER), *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    if not line:
        _, err = await proc.communicate()
        pytest.fail(f"the task process died: {err.decode()}")
    return proc, line.decode().strip()


async def _kill(proc: asyncio.subprocess.Process) -> None:
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    assert proc.returncode == -signal.SIGKILL


async def test_a_waiting_task_survives_sigkill_and_finishes_in_a_new_process(tmp_path: Path) -> None:
    db, effects = tmp_path / "tasks.db", tmp_path / "effects.txt"
    proc, task_id = await _start("create", str(db), str(effects))
    await _kill(proc)
    async with SQLiteTaskStore(db) as store:
        runner = TaskRunner(store, approve)
        shown = await runner.handle("tasks/get", {"taskId": task_id}, declared=True)
        assert shown["status"] == "input_required" and shown["inputRequests"] == {"q1": QUESTION}
        await runner.handle(
            "tasks/update",
            {"taskId": task_id, "inputResponses": {"q1": {"action": "accept", "content": {"approve": True}}}},
            declared=True,
        )
        await runner.wait(task_id)
        done = await runner.handle("tasks/get", {"taskId": task_id}, declared=True)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "deployed"
    assert effects.read_text().splitlines() == ["deployed=True"]


async def test_a_tail_killed_midway_is_not_run_again(tmp_path: Path) -> None:
    db, effects = tmp_path / "tasks.db", tmp_path / "effects.txt"
    creator, task_id = await _start("create", str(db), str(effects), "hang")
    await _kill(creator)
    answerer, said = await _start("answer", str(db), task_id)
    assert said == "answered"
    for _ in range(300):  # the tail has run its side effect and hangs before committing
        if effects.exists() and effects.read_text():
            break
        await asyncio.sleep(0.05)
    await _kill(answerer)
    assert effects.read_text().splitlines() == ["deployed=True"]
    async with SQLiteTaskStore(db) as store:
        runner = TaskRunner(store, approve)
        assert (await runner.get(task_id)).status == "working"
        await asyncio.sleep(LEASE + 0.2)  # the dead process's lease lapses
        assert await runner.sweep() == (0, 1)
        failed = await runner.get(task_id)
        assert failed.status == "failed" and "interrupted" in (failed.status_message or "")
        # a client that answers again after the restart changes nothing
        await runner.update(task_id, {"q1": {"action": "accept", "content": {"approve": True}}})
        await runner.wait(task_id)
    assert effects.read_text().splitlines() == ["deployed=True"]
