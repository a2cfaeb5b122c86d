"""examples/tasks/approval.py: a task asks for approval, the server restarts, the answer finishes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
