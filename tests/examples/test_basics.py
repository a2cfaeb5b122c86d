"""The examples that ask nothing (tools, resources, prompts), with the kit, on every era they speak."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from elicitkit import MCPError
from elicitkit.testing.kit import Kit

from ._load import spec

TOOLS = spec("tools_basic.py")
RESOURCES = spec("resources_and_templates.py")
PROMPTS = spec("prompts.py")

pytestmark = pytest.mark.timeout(60)


@pytest.mark.elicitkit_eras(transports=("memory", "stdio"))
async def test_tools_basic(elicitkit: Kit) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[dict[str, Any]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with elicitkit.connect(TOOLS, logging_callback=logs.append) as client:
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
    assert tools["add"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert tools["add"].annotations == {"readOnlyHint": True}
    assert tools["to_fahrenheit"].title == "Celsius to Fahrenheit"
    celsius = tools["to_fahrenheit"].input_schema["properties"]["celsius"]
    assert (celsius["description"], celsius["minimum"]) == ("Temperature in °C", -273.15)
    assert "ctx" not in tools["countdown"].input_schema["properties"]
    assert added.structured_content == {"result": 42}
    assert converted.structured_content == {"celsius": -40.0, "fahrenheit": -40.0}
    assert too_cold.is_error and "celsius" in too_cold.text
    assert countdown.text == "liftoff"
    assert progress == [(1, 2, "2..."), (2, 2, "1...")]
    assert [entry["data"] for entry in logs] == ["2...", "1..."]
    assert divided.is_error and divided.text == "cannot divide by zero"
    elicitkit.asked.assert_nothing_asked()


@pytest.mark.elicitkit_eras(transports=("memory", "stdio"))
async def test_resources_and_templates(elicitkit: Kit) -> None:
    async with elicitkit.connect(RESOURCES) as client:
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        config = await client.read_resource("config://app")
        profile = await client.read_resource("users://1/profile")
        with pytest.raises(MCPError) as missing:
            await client.read_resource("users://99/profile")
        with pytest.raises(MCPError) as no_match:
            await client.read_resource("users://1/settings")
        saved = await client.call_tool("write_note", {"title": "todo", "text": "with the kit"})
        note = await client.read_resource("notes://todo")
    assert [(r.uri, r.mime_type, r.description) for r in resources] == [
        ("config://app", "application/json", "The application settings.")
    ]
    assert [t.uri_template for t in templates] == ["users://{user_id}/profile", "notes://{title}"]
    assert json.loads(config.contents[0].text) == {"theme": "dark", "version": 3}  # type: ignore[union-attr]
    assert json.loads(profile.contents[0].text) == {"id": 1, "name": "Ada", "role": "admin"}  # type: ignore[union-attr]
    not_found = -32602 if elicitkit.modern else -32002  # 2026 has no -32002
    assert (missing.value.code, no_match.value.code) == (not_found, not_found)
    assert no_match.value.data == {"uri": "users://1/settings"}
    assert saved.text == "saved todo"
    assert note.contents[0].text == "with the kit"  # type: ignore[union-attr]
    assert note.contents[0].mime_type == "text/plain"


@pytest.mark.elicitkit_eras("2025-06-18", "2025-11-25")  # subscriptions are a session's: 2026 has none
async def test_resource_subscriptions(elicitkit: Kit) -> None:
    updated = anyio.Event()
    seen: list[tuple[str, dict[str, Any]]] = []

    def on_notification(method: str, params: dict[str, Any]) -> None:
        seen.append((method, params))
        updated.set()

    async with elicitkit.connect(RESOURCES, notification_callback=on_notification) as client:
        await client.subscribe_resource("notes://todo")
        await client.call_tool("write_note", {"title": "todo", "text": "x"})
        with anyio.fail_after(10):
            await updated.wait()
    assert seen == [("notifications/resources/updated", {"uri": "notes://todo"})]


@pytest.mark.elicitkit_eras(transports=("memory", "stdio"))
async def test_prompts(elicitkit: Kit) -> None:
    async with elicitkit.connect(PROMPTS) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        review = await client.get_prompt("review_code", {"code": "x = 1", "language": "rust"})
        debug = await client.get_prompt("debug_session", {"error": "boom"})
        completion = await client.complete(
            {"type": "ref/prompt", "name": "review_code"}, {"name": "language", "value": "ru"}
        )
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("nope")
    assert set(prompts) == {"review_code", "debug_session"}
    assert prompts["review_code"].title == "Code review"
    assert [(a.name, a.required, a.description) for a in prompts["review_code"].arguments or []] == [
        ("code", True, "The code to review."),
        ("language", False, "The language it is written in."),
    ]
    assert review.messages[0].content.text == "Please review this rust code and point out bugs:\n\nx = 1"  # type: ignore[union-attr]
    assert [m.role for m in debug.messages] == ["user", "assistant"]
    assert completion.completion.values == ["rust", "ruby"]
    assert unknown.value.code == -32602
