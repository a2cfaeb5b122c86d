"""A task body for the restart tests, importable by the test and by the server processes it kills.

``approve``: asks one yes/no question, then (the tail) appends a line to ``arguments["effects"]``
and, with ``arguments["hang"]``, hangs after it, so a test can kill the process mid-tail.
Run as a script it is a tiny "server": ``create PATH EFFECTS`` prints a task id once the task
waits for input; ``answer PATH TASK_ID`` answers it and runs the tail. Both then wait to be killed.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from elicitkit.server.tasks import RecordedAnswer, SQLiteTaskStore
from elicitkit.server.tasks.runner import Finished, NeedsInput, Outcome, Question, TaskRunner

QUESTION = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Approve the deploy?",
        "requestedSchema": {"type": "object", "properties": {"approve": {"type": "boolean"}}, "required": ["approve"]},
    },
}
FINGERPRINT = "approve-question-v1"
LEASE = 0.5


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as effects:
        effects.write(line)


async def approve(tool: str, arguments: dict[str, Any], answers: Mapping[str, RecordedAnswer]) -> Outcome:
    answer = answers.get("q1")
    if answer is None or answer.fingerprint not in (None, FINGERPRINT):
        return NeedsInput((Question("q1", QUESTION, FINGERPRINT),))
    approved = bool((answer.response.get("content") or {}).get("approve"))
    _append(Path(arguments["effects"]), f"deployed={approved}\n")  # the side effect
    if arguments.get("hang"):
        await asyncio.Event().wait()
    return Finished({"content": [{"type": "text", "text": "deployed" if approved else "not deployed"}]})


async def _serve(mode: str, path: str, arg: str, hang: bool) -> None:
    async with SQLiteTaskStore(path) as store:
        runner = TaskRunner(store, approve, lease=LEASE)
        if mode == "create":
            created = await runner.create("approve", {"effects": arg, "hang": hang})
            await runner.wait(created.task_id)
            print(created.task_id, flush=True)
        else:
            await runner.update(arg, {"q1": {"action": "accept", "content": {"approve": True}}})
            print("answered", flush=True)
        await asyncio.Event().wait()  # a server: runs until it is killed


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1], sys.argv[2], sys.argv[3], len(sys.argv) > 4))
