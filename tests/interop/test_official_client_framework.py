"""The official ``mcp`` 2.3.0 client against a server written with elicitkit's decorator framework.

The server is ``peers/framework_server.py`` (``Server`` with ``@tool``, ``@resource``,
``@prompt``, ``@completion``). The SDK's ``mcp.Client`` is forced onto the 2025-11-25
``initialize`` handshake (``mode="legacy"``) and every test runs over stdio (the client spawns
the server) and over Streamable HTTP (one server subprocess for the module).
"""

from __future__ import annotations

import base64
import sys
from typing import Any

import anyio
import mcp
import pytest
from mcp import StdioServerParameters
from mcp import types as mcp_types

from .support import PEERS, http_server_process

pytestmark = [
    pytest.mark.interop,
    pytest.mark.anyio,
    pytest.mark.timeout(90),
    # The SDK flags logging and resources/subscribe as deprecated for the 2026 era; we speak 2025-11-25.
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
]

FRAMEWORK_SERVER = PEERS / "framework_server.py"
PROTOCOL = "2025-11-25"
STEP = 45.0  # seconds one test's whole conversation may take (a hang guard; cold starts are slow)


@pytest.fixture(scope="module")
def framework_http_url() -> Any:
    with http_server_process(FRAMEWORK_SERVER) as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest) -> StdioServerParameters | str:
    if request.param == "stdio":
        return StdioServerParameters(command=sys.executable, args=[str(FRAMEWORK_SERVER), "stdio"])
    return str(request.getfixturevalue("framework_http_url"))


def client(target: StdioServerParameters | str, **kwargs: Any) -> mcp.Client:
    """The SDK's client on the legacy handshake, without its response cache (reads must be fresh)."""
    return mcp.Client(target, mode="legacy", cache=None, **kwargs)


def text_of(result: mcp_types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


async def test_official_client_lists_and_calls_framework_tools(target: Any) -> None:
    logs: list[mcp_types.LoggingMessageNotificationParams] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: mcp_types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with anyio.fail_after(STEP):
        async with client(target, logging_callback=on_log) as session:
            assert session.protocol_version == PROTOCOL
            assert session.server_info is not None
            assert (session.server_info.name, session.server_info.version) == ("framework-peer", "3.2.1")
            assert session.instructions == "written with elicitkit's decorators"
            caps = session.server_capabilities
            assert caps.tools is not None and caps.tools.list_changed
            assert caps.resources is not None and caps.resources.subscribe
            assert caps.prompts is not None
            assert caps.completions is not None

            listing = await session.list_tools()  # lets the SDK validate structuredContent below
            greeting = await session.call_tool("greet", {"name": "SDK"})
            total = await session.call_tool("add", {"a": 40, "b": 2})
            person = await session.call_tool("describe_person", {"name": "Ada", "age": 36, "city": "Delft"})
            picture = await session.call_tool("picture", {})
            exploded = await session.call_tool("explode", {})
            refused = await session.call_tool("refuse", {})
            wrong = await session.call_tool("add", {"a": "forty"})
            await session.set_logging_level("warning")
            chatty = await session.call_tool("chatty", {"message": "hi"})
            counted = await session.call_tool("countdown", {"n": 3}, progress_callback=on_progress)
            with pytest.raises(mcp.MCPError) as unknown:
                await session.call_tool("no_such_tool", {})
            assert text_of(await session.call_tool("greet", {"name": "again"})) == "Hello, again!"

    tools = {tool.name: tool for tool in listing.tools}
    assert set(tools) == {
        "greet",
        "add",
        "describe_person",
        "picture",
        "explode",
        "refuse",
        "chatty",
        "countdown",
        "touch",
    }
    assert tools["greet"].description == "Greet someone by name."
    assert tools["greet"].input_schema["properties"]["name"]["description"] == "Who to greet"
    assert tools["greet"].output_schema is None
    assert tools["add"].input_schema["properties"]["a"]["description"] == "The first addend."
    assert tools["add"].input_schema["required"] == ["a"]
    assert tools["add"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert tools["add"].annotations is not None and tools["add"].annotations.read_only_hint is True
    assert "ctx" not in tools["chatty"].input_schema["properties"]
    person_schema = tools["describe_person"].output_schema
    assert person_schema is not None
    assert person_schema["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert "Address" in person_schema["$defs"]

    assert text_of(greeting) == "Hello, SDK!"
    assert total.structured_content == {"result": 42}
    assert text_of(total) == "42"
    assert person.structured_content == {"name": "Ada", "age": 36, "address": {"city": "Delft", "country": "NL"}}
    [image] = picture.content
    assert isinstance(image, mcp_types.ImageContent)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data) == b"\x89PNG\r\n\x1a\nframework"
    assert exploded.is_error and "the reactor melted" in text_of(exploded)
    assert refused.is_error and text_of(refused) == "not today"
    assert wrong.is_error and "a: Input should be a valid integer" in text_of(wrong)
    assert text_of(chatty) == "hi"
    assert [(p.level, p.logger, p.data) for p in logs] == [("warning", "chatty", "warning: hi")]
    assert text_of(counted) == "liftoff after 3"
    assert progress == [(1, 3, "tick 1"), (2, 3, "tick 2"), (3, 3, "tick 3")]
    assert unknown.value.code == -32602
    assert "no_such_tool" in unknown.value.error.message


async def test_official_client_reads_framework_resources_and_templates(target: Any) -> None:
    with anyio.fail_after(STEP):
        async with client(target) as session:
            resources = await session.list_resources()
            templates = await session.list_resource_templates()
            config = await session.read_resource("config://app")
            readme = await session.read_resource("notes://readme")
            profile = await session.read_resource("users://21/profile")
            with pytest.raises(mcp.MCPError) as missing:
                await session.read_resource("users://21/settings")
            with pytest.raises(mcp.MCPError) as not_int:
                await session.read_resource("users://abc/profile")
            completion = await session.complete(
                mcp_types.PromptReference(type="ref/prompt", name="review"), {"name": "language", "value": "p"}
            )
            assert text_of(await session.call_tool("greet", {"name": "still"})) == "Hello, still!"

    by_uri = {str(r.uri): r for r in resources.resources}
    assert set(by_uri) == {"config://app", "notes://readme"}
    assert by_uri["config://app"].mime_type == "application/json"
    assert by_uri["config://app"].description == "Application settings."
    [template] = templates.resource_templates
    assert template.uri_template == "users://{user_id}/profile"
    assert template.name == "profile"
    assert template.description == "A user's profile."

    [config_item] = config.contents
    assert isinstance(config_item, mcp_types.TextResourceContents)
    assert config_item.text == '{"theme":"dark","retries":3}'
    assert config_item.mime_type == "application/json"
    [readme_item] = readme.contents
    assert isinstance(readme_item, mcp_types.TextResourceContents)
    assert (readme_item.text, readme_item.mime_type) == ("read me first", "text/plain")
    [profile_item] = profile.contents
    assert isinstance(profile_item, mcp_types.TextResourceContents)
    assert str(profile_item.uri) == "users://21/profile"
    assert profile_item.text == '{"id":21,"double":42}'
    assert missing.value.code == -32002
    assert missing.value.error.data == {"uri": "users://21/settings"}
    assert not_int.value.code == -32602
    assert completion.completion.values == ["python", "perl"]


async def test_official_client_gets_framework_prompts(target: Any) -> None:
    with anyio.fail_after(STEP):
        async with client(target) as session:
            prompts = await session.list_prompts()
            review = await session.get_prompt("review", {"code": "print(1)", "language": "python"})
            chat = await session.get_prompt("conversation", {"topic": "tides"})
            with pytest.raises(mcp.MCPError) as missing_argument:
                await session.get_prompt("review", {"language": "rust"})
            with pytest.raises(mcp.MCPError) as unknown:
                await session.get_prompt("no_such_prompt", {})
            assert (await session.get_prompt("review", {"code": "x"})).messages

    by_name = {p.name: p for p in prompts.prompts}
    assert set(by_name) == {"review", "conversation"}
    review_prompt = by_name["review"]
    assert review_prompt.title == "Code review"
    assert review_prompt.description == "Review some code."
    assert [(a.name, a.required, a.description) for a in review_prompt.arguments or []] == [
        ("code", True, "The code to review."),
        ("language", False, "Its language."),
    ]
    assert review.description == "Review some code."
    [message] = review.messages
    assert message.role == "user"
    assert isinstance(message.content, mcp_types.TextContent)
    assert message.content.text == "Review this python code:\nprint(1)"
    assert [m.role for m in chat.messages] == ["user", "assistant"]
    assert [m.content.text for m in chat.messages if isinstance(m.content, mcp_types.TextContent)] == [
        "Tell me about tides.",
        "What about tides?",
    ]
    assert missing_argument.value.code == -32602
    assert "code" in missing_argument.value.error.message
    assert unknown.value.code == -32602


async def test_official_client_subscribes_and_receives_resource_updates(target: Any) -> None:
    updates: list[str] = []
    others: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mcp_types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            arrived.set()
        elif isinstance(message, Exception):
            others.append(repr(message))

    with anyio.fail_after(STEP):
        async with client(target, message_handler=on_message) as session:
            await session.subscribe_resource("config://app")
            # Not subscribed to this one: touching it must not notify us.
            assert text_of(await session.call_tool("touch", {"uri": "notes://readme"})) == "touched notes://readme"
            # Over HTTP the update travels on the standalone GET stream, which the SDK opens in the
            # background after the handshake; a notification sent before it is up is lost (the
            # spec allows that), so touch until one gets through.
            while not arrived.is_set():
                await session.call_tool("touch", {"uri": "config://app"})
                with anyio.move_on_after(1.0):
                    await arrived.wait()
            await session.unsubscribe_resource("config://app")
            count = len(updates)
            await session.call_tool("touch", {"uri": "config://app"})
            await session.call_tool("greet", {"name": "after"})
            await anyio.sleep(0.2)
            after_unsubscribe = updates[count:]
    assert updates
    assert set(updates) == {"config://app"}
    assert after_unsubscribe == []
    assert others == []
