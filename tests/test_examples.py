"""The examples under ``examples/`` run: their ``--demo`` prints what it should.

Each example runs as ``python example.py --demo`` (an in-memory client inside the script,
output checked). Their tools, resources and prompts are tested with the pytest kit on every
era and over stdio in ``tests/examples/test_basics.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TOOLS = EXAMPLES / "tools_basic.py"
RESOURCES = EXAMPLES / "resources_and_templates.py"
PROMPTS = EXAMPLES / "prompts.py"

STEP = 60.0  # a guard against hangs only: a cold interpreter start is slow on a busy machine


@pytest.fixture(scope="module")
def demo_output() -> dict[Path, list[str]]:
    """Every example run with ``--demo``, all at once (each is a fresh interpreter; they start in parallel)."""
    procs = {
        script: subprocess.Popen(
            [sys.executable, str(script), "--demo"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for script in (TOOLS, RESOURCES, PROMPTS)
    }
    outputs: dict[Path, list[str]] = {}
    try:
        for script, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=STEP)
            assert proc.returncode == 0, f"{script.name} --demo failed:\n{stderr}"
            outputs[script] = stdout.splitlines()
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return outputs


# =============================================================================================
# --demo
# =============================================================================================


def test_tools_basic_demo(demo_output: dict[Path, list[str]]) -> None:
    lines = demo_output[TOOLS]
    assert lines[0] == "tools: add, to_fahrenheit, countdown, divide"
    schema = json.loads(lines[1].removeprefix("add schema: "))
    assert schema["required"] == ["a"]
    assert schema["properties"]["a"]["description"] == "The first number."
    assert "add(2, 3) = {'result': 5}" in lines
    assert "to_fahrenheit(100) = {'celsius': 100.0, 'fahrenheit': 212.0}" in lines
    assert [line for line in lines if line.startswith("progress")] == [
        "progress 1/3: 3...",
        "progress 2/3: 2...",
        "progress 3/3: 1...",
    ]
    assert [line for line in lines if line.startswith("log")] == ["log info: 3...", "log info: 2...", "log info: 1..."]
    assert "countdown: liftoff" in lines
    assert "divide(1, 0): isError=True cannot divide by zero" in lines
    assert any(line.startswith("add('two'): isError=True") and "a: Input should be" in line for line in lines)


def test_resources_and_templates_demo(demo_output: dict[Path, list[str]]) -> None:
    lines = demo_output[RESOURCES]
    assert lines == [
        "resources: ['config://app']",
        "templates: ['users://{user_id}/profile', 'notes://{title}']",
        'config://app -> {"theme":"dark","version":3}',
        'users://2/profile -> {"id":2,"name":"Grace","role":"engineer"}',
        "notes://shopping%20list -> (no note called 'shopping list')",
        "nothing://here -> error -32002: Resource not found: nothing://here",
        "notification notifications/resources/updated {'uri': 'notes://todo'}",
        "saved todo",
        "notes://todo -> ship it",
    ]


def test_prompts_demo(demo_output: dict[Path, list[str]]) -> None:
    lines = demo_output[PROMPTS]
    assert lines[:2] == [
        "prompt review_code(code, language?): Ask for a review of a piece of code.",
        "prompt debug_session(error): Start a debugging conversation about an error.",
    ]
    assert "review_code -> user: 'Please review this python code and point out bugs:\\n\\nprint(1/0)'" in lines
    assert "debug_session -> user: I am seeing this error: KeyError: 'x'" in lines
    assert "debug_session -> assistant: Let's work through it. What did you expect to happen?" in lines
    assert "complete language='p' -> ['python', 'perl', 'php']" in lines
    assert any(line.startswith("review_code without code -> error -32602") for line in lines)
