"""The examples under ``examples/`` run: their ``--demo`` prints what it should, and over stdio they serve.

Each example is run twice: as ``python example.py --demo`` (an in-memory client inside the
script, output checked), and as a stdio server spawned by :class:`elicitkit.Client`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from elicitkit import Client, MCPError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TOOLS = EXAMPLES / "tools_basic.py"
RESOURCES = EXAMPLES / "resources_and_templates.py"
PROMPTS = EXAMPLES / "prompts.py"

STEP = 60.0  # a guard against hangs only: a cold interpreter start is slow on a busy machine


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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


def stdio(script: Path, **options: Any) -> Client:
    return Client([sys.executable, str(script)], timeout=STEP, **options)


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


# =============================================================================================
# over stdio
# =============================================================================================


@pytest.mark.anyio
async def test_tools_basic_over_stdio() -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[dict[str, Any]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with anyio.fail_after(STEP):
        async with stdio(TOOLS, logging_callback=logs.append) as client:
            assert client.server_info["name"] == "tools-basic"
            assert client.instructions == "A calculator and a unit converter."
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            added = await client.call_tool("add", {"a": 40, "b": 2})
            converted = await client.call_tool("to_fahrenheit", {"celsius": -40})
            too_cold = await client.call_tool("to_fahrenheit", {"celsius": -300})
            await client.set_logging_level("info")
            countdown = await client.call_tool("countdown", {"n": 2}, progress_callback=on_progress)
            divided = await client.call_tool("divide", {"a": 1, "b": 0})
    assert set(tools) == {"add", "to_fahrenheit", "countdown", "divide"}
    assert tools["add"].annotations == {"readOnlyHint": True}
    assert tools["add"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert tools["to_fahrenheit"].title == "Celsius to Fahrenheit"
    celsius = tools["to_fahrenheit"].input_schema["properties"]["celsius"]
    assert celsius["description"] == "Temperature in °C"
    assert celsius["minimum"] == -273.15
    assert "ctx" not in tools["countdown"].input_schema["properties"]
    assert added.structured_content == {"result": 42}
    assert converted.structured_content == {"celsius": -40.0, "fahrenheit": -40.0}
    assert too_cold.is_error and "celsius" in too_cold.text
    assert countdown.text == "liftoff"
    assert progress == [(1, 2, "2..."), (2, 2, "1...")]
    assert [entry["data"] for entry in logs] == ["2...", "1..."]
    assert divided.is_error and divided.text == "cannot divide by zero"


@pytest.mark.anyio
async def test_resources_and_templates_over_stdio() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    updated = anyio.Event()

    def on_notification(method: str, params: dict[str, Any]) -> None:
        seen.append((method, params))
        if method == "notifications/resources/updated":
            updated.set()

    with anyio.fail_after(STEP):
        async with stdio(RESOURCES, notification_callback=on_notification) as client:
            resources = (await client.list_resources()).resources
            templates = (await client.list_resource_templates()).resource_templates
            config = await client.read_resource("config://app")
            profile = await client.read_resource("users://1/profile")
            with pytest.raises(MCPError) as missing_user:
                await client.read_resource("users://99/profile")
            with pytest.raises(MCPError) as no_match:
                await client.read_resource("users://1/settings")
            await client.subscribe_resource("notes://todo")
            saved = await client.call_tool("write_note", {"title": "todo", "text": "over stdio"})
            await updated.wait()
            note = await client.read_resource("notes://todo")
    assert [(r.uri, r.mime_type, r.description) for r in resources] == [
        ("config://app", "application/json", "The application settings.")
    ]
    assert [t.uri_template for t in templates] == ["users://{user_id}/profile", "notes://{title}"]
    assert json.loads(config.contents[0].text) == {"theme": "dark", "version": 3}  # type: ignore[union-attr]
    assert json.loads(profile.contents[0].text) == {"id": 1, "name": "Ada", "role": "admin"}  # type: ignore[union-attr]
    assert missing_user.value.code == -32002
    assert no_match.value.code == -32002
    assert no_match.value.data == {"uri": "users://1/settings"}
    assert saved.text == "saved todo"
    assert seen == [("notifications/resources/updated", {"uri": "notes://todo"})]
    assert note.contents[0].text == "over stdio"  # type: ignore[union-attr]
    assert note.contents[0].mime_type == "text/plain"


@pytest.mark.anyio
async def test_prompts_over_stdio() -> None:
    with anyio.fail_after(STEP):
        async with stdio(PROMPTS) as client:
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            review = await client.get_prompt("review_code", {"code": "x = 1", "language": "rust"})
            debug = await client.get_prompt("debug_session", {"error": "boom"})
            completion = await client.complete(
                {"type": "ref/prompt", "name": "review_code"}, {"name": "language", "value": "ru"}
            )
            with pytest.raises(MCPError) as unknown:
                await client.get_prompt("nope")
    assert set(prompts) == {"review_code", "debug_session"}
    arguments = prompts["review_code"].arguments or []
    assert [(a.name, a.required, a.description) for a in arguments] == [
        ("code", True, "The code to review."),
        ("language", False, "The language it is written in."),
    ]
    assert prompts["review_code"].title == "Code review"
    assert review.messages[0].content.text == "Please review this rust code and point out bugs:\n\nx = 1"  # type: ignore[union-attr]
    assert [m.role for m in debug.messages] == ["user", "assistant"]
    assert completion.completion.values == ["rust", "ruby"]
    assert unknown.value.code == -32602
