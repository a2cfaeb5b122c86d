"""``elicitkit call --task [--detach]`` and ``elicitkit tasks get|answer|cancel`` against a task
server over HTTP: one command starts the task and leaves, others look at it and answer it."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from elicitkit.server.tasks.serving import ENV_TASK_DB
from interop.support import serve_on_free_port

from ._support import ROOT, run

pytestmark = pytest.mark.timeout(120)
TASK_SERVER = ROOT / "tests" / "server" / "tasks" / "_task_server.py"


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    env = {**os.environ, ENV_TASK_DB: str(tmp_path / "tasks.db")}
    with serve_on_free_port(lambda port: [sys.executable, str(TASK_SERVER), str(port)], "task server", env=env) as (
        port,
        _proc,
        _log,
    ):
        yield f"http://127.0.0.1:{port}/mcp"


def test_detach_then_answer_from_another_command(url: str, tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    defaults = tmp_path / "defaults.json"
    defaults.write_text(json.dumps({"approve": True}))
    args = ["-a", "target=prod", "-a", f"effects={effects}"]
    started = run(["call", url, "deploy", *args, "--task", "--detach"]).expect(0)
    task_id = started.stdout.strip()
    assert task_id and "\n" not in task_id
    for _ in range(100):
        shown = json.loads(run(["tasks", "get", url, task_id]).expect(0).stdout)
        if shown["status"] == "input_required":
            break
        time.sleep(0.1)
    assert list(shown["inputRequests"]) == ["approve"]
    answered = run(["tasks", "answer", url, task_id, "--ui", "ci", "--defaults", str(defaults)]).expect(0)
    assert answered.stdout.strip() == "prod: deployed"
    assert effects.read_text().splitlines() == ["deployed prod=True"]
    missing = run(["tasks", "cancel", url, "no-such-task"]).expect(2)
    assert "-32602" in missing.stderr


def test_call_task_answers_in_one_command(url: str, tmp_path: Path) -> None:
    defaults = tmp_path / "defaults.json"
    defaults.write_text(json.dumps({"approve": False}))
    effects = tmp_path / "effects.txt"
    args = ["-a", "target=staging", "-a", f"effects={effects}", "--ui", "ci", "--defaults", str(defaults)]
    ran = run(["call", url, "deploy", *args, "--task"]).expect(0)
    assert ran.stdout.strip() == "staging: not deployed"
