"""The decorator framework (:class:`elicitkit.Server`) seen from a client, in memory.

Every test builds its own server (cheap) and talks to it through :class:`elicitkit.Client`,
so what is checked is what goes over the wire: schemas derived from type hints, results
rendered from return values, errors, logging, progress, resources, prompts, completion,
notifications and pagination.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

import anyio
import pytest
from pydantic import BaseModel, Field

from elicitkit import Client, Context, MCPError, Server, ToolError, ToolResult
from elicitkit.client import results as wire
from elicitkit.content import Audio, EmbeddedResource, Image, ResourceLink

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]

jsonschema = pytest.importorskip("jsonschema")

PNG = b"\x89PNG\r\n\x1a\n-not-really-a-png"
WAV = b"RIFF\x00\x00\x00\x00WAVEfmt "


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str
    age: int = 0
    address: Address


class Stats(BaseModel):
    count: int
    mean: float


def _tools(server: Server) -> None:
    @server.tool()
    async def forecast(
        ctx: Context,
        city: Annotated[str, Field(description="City to forecast")],
        days: int = 3,
        units: Literal["c", "f"] = "c",
    ) -> str:
        """Forecast the weather."""
        return f"{city}: sunny for {days} days ({units}); asked by {ctx.client_info.get('name')}"

    @server.tool()
    def register(person: Person, tags: list[str] | None = None, *, ctx: Context) -> Person:
        """Register a person.

        People are stored nowhere; this tool echoes what it was given.

        Args:
            person: The person to register.
            tags: Labels to attach.
        """
        assert isinstance(ctx, Context)
        return person

    @server.tool(title="Adder", annotations={"readOnlyHint": True})
    def add(a: int, b: int = 2) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        return text.upper()

    @server.tool()
    def stats(values: list[float]) -> Stats:
        return Stats(count=len(values), mean=sum(values) / len(values))

    @server.tool(structured_output=False)
    def plain_number() -> int:
        return 7


def _content_tools(server: Server) -> None:
    @server.tool()
    def picture() -> Image:
        return Image(data=PNG, mime_type="image/png")

    @server.tool()
    def sound() -> Audio:
        return Audio(data=WAV, mime_type="audio/wav")

    @server.tool()
    def embedded() -> EmbeddedResource:
        return EmbeddedResource("memo://note", text="remember the milk", mime_type="text/plain")

    @server.tool()
    def embedded_blob() -> EmbeddedResource:
        return EmbeddedResource("memo://blob", blob=b"\x00\x01\x02", mime_type="application/octet-stream")

    @server.tool()
    def link() -> ResourceLink:
        return ResourceLink("users://7/profile", "profile-7", description="User 7", mime_type="application/json")

    @server.tool()
    def mixed() -> list[Any]:
        return [
            "caption",
            Image(data=PNG, mime_type="image/png"),
            ResourceLink("users://1/profile", "profile-1"),
        ]

    @server.tool()
    def full() -> ToolResult:
        return ToolResult(content=["partial answer"], structured={"ok": False}, is_error=True)


def _error_tools(server: Server) -> None:
    @server.tool()
    def fail() -> str:
        raise ValueError("kaboom: the flux capacitor")

    @server.tool()
    def refuse() -> str:
        raise ToolError("You may not do that.")

    @server.tool()
    def protocol_error() -> str:
        raise MCPError(-32001, "custom protocol failure", {"why": "because"})


def _context_tools(server: Server) -> None:
    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.debug("a debug line")
        await ctx.info("an info line")
        await ctx.warning({"structured": "warning"}, logger="weather")
        await ctx.error("an error line")
        return "logged"

    @server.tool()
    async def steps(n: int, ctx: Context) -> str:
        for i in range(1, n + 1):
            await ctx.report_progress(i, n, f"step {i}")
        return f"did {n} steps"

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        await ctx.server.notify_resource_updated(uri)
        return f"touched {uri}"


def _resources(server: Server) -> None:
    @server.resource("config://app", mime_type="application/json")
    def app_config() -> dict[str, Any]:
        """The application configuration."""
        return {"debug": False, "name": "demo"}

    @server.resource("notes://readme")
    def readme() -> str:
        return "hello, reader"

    @server.resource("bin://logo", mime_type="image/png")
    def logo() -> bytes:
        return PNG

    @server.resource("users://{user_id}/profile")
    def profile(user_id: int) -> dict[str, Any]:
        """A user's profile."""
        return {"id": user_id, "id_type": type(user_id).__name__}

    @server.resource("files://{name}", mime_type="text/plain")
    def file(name: str) -> str:
        return f"contents of [{name}]"

    @server.resource("search://items{?q,limit}")
    def search(q: str, limit: int) -> str:
        return f"{limit} results for [{q}]"

    @server.resource("ctx://{key}")
    async def with_context(key: str, ctx: Context) -> str:
        return f"{key} read in request {ctx.request_id!r}"


def _prompts(server: Server) -> None:
    @server.prompt(title="Code review")
    def review(code: str, language: str = "python") -> str:
        """Review a piece of code.

        Args:
            code: The code to review.
            language: Its language.
        """
        return f"Please review this {language} code:\n{code}"

    @server.prompt()
    def conversation(topic: str) -> list[Any]:
        from elicitkit.content import AssistantMessage, UserMessage

        return [
            UserMessage(f"Tell me about {topic}."),
            AssistantMessage(f"{topic} is a big subject. Where shall I start?"),
            UserMessage(Image(data=PNG, mime_type="image/png")),
        ]


def build_server(**options: Any) -> Server:
    server = Server("framework-test", "1.0.0", **options)
    _tools(server)
    _content_tools(server)
    _error_tools(server)
    _context_tools(server)
    _resources(server)
    _prompts(server)

    @server.completion()
    def complete(ref: dict[str, Any], argument: str, value: str, context: dict[str, Any]) -> list[str]:
        if ref.get("type") == "ref/prompt" and argument == "language":
            return [lang for lang in ("python", "perl", "php", "rust") if lang.startswith(value)]
        if ref.get("type") == "ref/resource" and argument == "name":
            return [f"{value}{suffix}" for suffix in (".txt", ".md")]
        return []

    return server


@pytest.fixture
def server() -> Server:
    return build_server()


class Notifications:
    """A ``notification_callback`` that records what arrives and lets a test wait for it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self._arrived = anyio.Event()

    def __call__(self, method: str, params: dict[str, Any]) -> None:
        self.seen.append((method, params))
        self._arrived.set()
        self._arrived = anyio.Event()

    def methods(self) -> list[str]:
        return [method for method, _ in self.seen]

    async def wait_for(self, count: int, timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            while len(self.seen) < count:
                await self._arrived.wait()


async def tool_schemas(client: Client) -> dict[str, dict[str, Any]]:
    listing = await client.request("tools/list")
    return {tool["name"]: tool for tool in listing["tools"]}


# =============================================================================================
# input schemas
# =============================================================================================


async def test_input_schema_from_type_hints(server: Server) -> None:
    async with Client(server) as client:
        tools = await tool_schemas(client)
    forecast = tools["forecast"]
    assert forecast["description"] == "Forecast the weather."
    schema = forecast["inputSchema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"city", "days", "units"}  # ctx is injected, never described
    assert schema["required"] == ["city"]
    assert schema["properties"]["city"]["type"] == "string"
    assert schema["properties"]["city"]["description"] == "City to forecast"
    assert schema["properties"]["days"]["type"] == "integer"
    assert schema["properties"]["days"]["default"] == 3
    assert schema["properties"]["units"]["enum"] == ["c", "f"]
    assert schema["properties"]["units"]["default"] == "c"

    add = tools["add"]
    assert add["title"] == "Adder"
    assert add["annotations"] == {"readOnlyHint": True}
    assert add["inputSchema"]["required"] == ["a"]


async def test_input_schema_keeps_defs_for_nested_models_and_docstring_descriptions(server: Server) -> None:
    async with Client(server) as client:
        tools = await tool_schemas(client)
    register = tools["register"]
    assert (
        register["description"]
        == "Register a person.\n\nPeople are stored nowhere; this tool echoes what it was given."
    )
    schema = register["inputSchema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert set(schema["properties"]) == {"person", "tags"}
    assert "ctx" not in schema.get("required", [])
    assert schema["required"] == ["person"]
    assert set(schema["$defs"]) == {"Person", "Address"}
    assert schema["properties"]["person"]["$ref"] == "#/$defs/Person"
    assert schema["properties"]["person"]["description"] == "The person to register."
    assert schema["properties"]["tags"]["description"] == "Labels to attach."
    assert schema["properties"]["tags"]["default"] is None
    person = schema["$defs"]["Person"]
    assert person["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert person["required"] == ["name", "address"]
    assert person["properties"]["age"]["default"] == 0

    validator = jsonschema.Draft202012Validator(schema)
    good = {"person": {"name": "Ada", "address": {"street": "1 Loop", "city": "London"}}}
    assert validator.is_valid(good)
    assert not validator.is_valid({"person": {"name": "Ada", "address": {"street": "1 Loop"}}})


async def test_tool_without_arguments_has_an_empty_object_schema(server: Server) -> None:
    async with Client(server) as client:
        tools = await tool_schemas(client)
    assert tools["fail"]["inputSchema"] == {"type": "object", "properties": {}}


async def test_context_parameter_is_injected(server: Server) -> None:
    async with Client(server, client_info={"name": "tester", "version": "1"}) as client:
        result = await client.call_tool("forecast", {"city": "Oslo", "days": 2})
    assert not result.is_error
    assert result.text == "Oslo: sunny for 2 days (c); asked by tester"


def test_optional_context_parameter_is_injected_not_described() -> None:
    """``ctx: Context | None = None`` is the usual spelling when a function is also called directly."""
    server = Server("optional-context")

    @server.tool()
    async def maybe(x: int, ctx: Context | None = None) -> str:
        return f"{x} {ctx is not None}"

    assert set(server.tools["maybe"].input_schema["properties"]) == {"x"}


async def test_context_knows_the_request_and_reads_resources(server: Server) -> None:
    @server.tool()
    async def introspect(ctx: Context) -> dict[str, Any]:
        contents = await ctx.read_resource("users://5/profile")
        return {
            "version": ctx.protocol_version,
            "client": ctx.client_info.get("name"),
            "meta": ctx.meta,
            "request_id_type": type(ctx.request_id).__name__,
            "profile": contents[0]["text"],
        }

    async with Client(server, client_info={"name": "introspector", "version": "2"}) as client:
        raw = await client.request("tools/call", {"name": "introspect", "arguments": {}, "_meta": {"trace": "abc"}})
    structured = raw["structuredContent"]
    assert structured["result"]["version"] == client.protocol_version
    assert structured["result"]["client"] == "introspector"
    assert structured["result"]["meta"] == {"trace": "abc"}
    assert structured["result"]["request_id_type"] in {"int", "str"}
    assert structured["result"]["profile"] == '{"id":5,"id_type":"int"}'


def test_registration_mistakes_are_reported_early() -> None:
    server = Server("mistakes")

    @server.tool()
    def once() -> str:
        return "one"

    with pytest.raises(ValueError, match="already registered"):
        server.tool(name="once")(lambda: "two")

    with pytest.raises(TypeError, match=r"\*args"):

        @server.tool()
        def variadic(*names: str) -> str:
            return ",".join(names)


# =============================================================================================
# output schemas and structured content
# =============================================================================================


async def test_model_return_gives_output_schema_and_structured_content(server: Server) -> None:
    async with Client(server) as client:
        tools = await tool_schemas(client)
        person = {"name": "Ada", "age": 36, "address": {"street": "1 Loop", "city": "London"}}
        result = await client.request("tools/call", {"name": "register", "arguments": {"person": person}})
    output = tools["register"]["outputSchema"]
    jsonschema.Draft202012Validator.check_schema(output)
    assert output["type"] == "object"
    assert output["required"] == ["name", "address"]
    assert output["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert "Address" in output["$defs"]
    assert result["structuredContent"] == person
    jsonschema.validate(result["structuredContent"], output)
    # The same data as text, for clients that ignore structured content.
    assert result["content"] == [{"type": "text", "text": Person.model_validate(person).model_dump_json()}]
    assert "isError" not in result


async def test_second_model_output(server: Server) -> None:
    async with Client(server) as client:
        tools = await tool_schemas(client)
        result = await client.call_tool("stats", {"values": [1, 2, 3]})
    assert tools["stats"]["outputSchema"]["properties"]["mean"]["type"] == "number"
    assert result.structured_content == {"count": 3, "mean": 2.0}
    jsonschema.validate(result.structured_content, tools["stats"]["outputSchema"])


async def test_int_return_is_wrapped_as_result(server: Server) -> None:
    async with Client(server) as client:
        tools = await tool_schemas(client)
        result = await client.call_tool("add", {"a": 40})
    assert tools["add"]["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert result.structured_content == {"result": 42}
    assert result.text == "42"


async def test_str_return_is_text_only(server: Server) -> None:
    async with Client(server) as client:
        tools = await tool_schemas(client)
        raw = await client.request("tools/call", {"name": "shout", "arguments": {"text": "hey"}})
    assert "outputSchema" not in tools["shout"]
    assert raw == {"content": [{"type": "text", "text": "HEY"}]}


async def test_structured_output_false_gives_text_only(server: Server) -> None:
    async with Client(server) as client:
        tools = await tool_schemas(client)
        raw = await client.request("tools/call", {"name": "plain_number", "arguments": {}})
    assert "outputSchema" not in tools["plain_number"]
    assert raw == {"content": [{"type": "text", "text": "7"}]}


# =============================================================================================
# content helpers
# =============================================================================================


async def test_image_content(server: Server) -> None:
    async with Client(server) as client:
        tools = await tool_schemas(client)
        result = await client.call_tool("picture")
    assert "outputSchema" not in tools["picture"]
    [block] = result.content
    assert isinstance(block, wire.ImageContent)
    assert block.mime_type == "image/png"
    assert base64.b64decode(block.data) == PNG


async def test_image_from_path_guesses_mime_type(tmp_path: Any) -> None:
    path = tmp_path / "pic.jpg"
    path.write_bytes(b"\xff\xd8\xff-jpeg")
    server = Server("paths")

    @server.tool()
    def photo() -> Image:
        return Image(path=path)

    async with Client(server) as client:
        result = await client.call_tool("photo")
    [block] = result.content
    assert isinstance(block, wire.ImageContent)
    assert block.mime_type == "image/jpeg"
    assert base64.b64decode(block.data) == b"\xff\xd8\xff-jpeg"


async def test_audio_content(server: Server) -> None:
    async with Client(server) as client:
        result = await client.call_tool("sound")
    [block] = result.content
    assert isinstance(block, wire.AudioContent)
    assert block.mime_type == "audio/wav"
    assert base64.b64decode(block.data) == WAV


async def test_embedded_resource_content(server: Server) -> None:
    async with Client(server) as client:
        text = await client.call_tool("embedded")
        blob = await client.call_tool("embedded_blob")
    [block] = text.content
    assert isinstance(block, wire.EmbeddedResource)
    assert isinstance(block.resource, wire.TextResourceContents)
    assert (block.resource.uri, block.resource.text, block.resource.mime_type) == (
        "memo://note",
        "remember the milk",
        "text/plain",
    )
    [block] = blob.content
    assert isinstance(block, wire.EmbeddedResource)
    assert isinstance(block.resource, wire.BlobResourceContents)
    assert base64.b64decode(block.resource.blob) == b"\x00\x01\x02"


async def test_resource_link_content(server: Server) -> None:
    async with Client(server) as client:
        raw = await client.request("tools/call", {"name": "link", "arguments": {}})
    assert raw["content"] == [
        {
            "type": "resource_link",
            "uri": "users://7/profile",
            "name": "profile-7",
            "description": "User 7",
            "mimeType": "application/json",
        }
    ]


async def test_mixed_content_list(server: Server) -> None:
    async with Client(server) as client:
        result = await client.call_tool("mixed")
    assert [type(b) for b in result.content] == [wire.TextContent, wire.ImageContent, wire.ResourceLink]
    assert result.text == "caption"
    assert result.structured_content is None


async def test_tool_result_gives_full_control(server: Server) -> None:
    async with Client(server) as client:
        raw = await client.request("tools/call", {"name": "full", "arguments": {}})
    assert raw == {
        "content": [{"type": "text", "text": "partial answer"}],
        "structuredContent": {"ok": False},
        "isError": True,
    }


# =============================================================================================
# errors raised by tools
# =============================================================================================


async def test_tool_that_raises_gives_is_error_with_the_message(server: Server) -> None:
    async with Client(server) as client:
        result = await client.call_tool("fail")
        assert (await client.call_tool("shout", {"text": "still here"})).text == "STILL HERE"
    assert result.is_error
    assert "kaboom: the flux capacitor" in result.text
    assert "fail" in result.text


async def test_tool_error_message_is_passed_verbatim(server: Server) -> None:
    async with Client(server) as client:
        raw = await client.request("tools/call", {"name": "refuse", "arguments": {}})
    assert raw == {"content": [{"type": "text", "text": "You may not do that."}], "isError": True}


async def test_mcp_error_in_a_tool_becomes_a_json_rpc_error(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("protocol_error")
        assert (await client.call_tool("add", {"a": 1})).structured_content == {"result": 3}
    assert caught.value.code == -32001
    assert caught.value.message == "custom protocol failure"
    assert caught.value.data == {"why": "because"}


# =============================================================================================
# logging and progress
# =============================================================================================


async def test_logging_respects_set_level(server: Server) -> None:
    logs: list[dict[str, Any]] = []
    async with Client(server, logging_callback=logs.append) as client:
        await client.set_logging_level("warning")
        assert (await client.call_tool("chatty")).text == "logged"
        at_warning = list(logs)
        logs.clear()
        await client.set_logging_level("debug")
        await client.call_tool("chatty")
        at_debug = list(logs)
        with pytest.raises(MCPError) as bad_level:
            await client.set_logging_level("loud")
    assert at_warning == [
        {"level": "warning", "data": {"structured": "warning"}, "logger": "weather"},
        {"level": "error", "data": "an error line"},
    ]
    assert [entry["level"] for entry in at_debug] == ["debug", "info", "warning", "error"]
    assert at_debug[0]["data"] == "a debug line"
    assert bad_level.value.code == -32602


async def test_progress_notifications(server: Server) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(server) as client:
        result = await client.call_tool("steps", {"n": 3}, progress_callback=on_progress)
        # Without a progress token the tool's reports go nowhere, and nothing breaks.
        quiet = await client.call_tool("steps", {"n": 2})
    assert result.text == "did 3 steps"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert quiet.text == "did 2 steps"


# =============================================================================================
# resources and templates
# =============================================================================================


async def test_list_resources_and_templates(server: Server) -> None:
    async with Client(server) as client:
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
    by_uri = {r.uri: r for r in resources.resources}
    assert set(by_uri) == {"config://app", "notes://readme", "bin://logo"}
    assert by_uri["config://app"].name == "app_config"
    assert by_uri["config://app"].description == "The application configuration."
    assert by_uri["config://app"].mime_type == "application/json"
    by_template = {t.uri_template: t for t in templates.resource_templates}
    assert set(by_template) == {
        "users://{user_id}/profile",
        "files://{name}",
        "search://items{?q,limit}",
        "ctx://{key}",
    }
    assert by_template["users://{user_id}/profile"].name == "profile"
    assert by_template["users://{user_id}/profile"].description == "A user's profile."
    assert by_template["files://{name}"].mime_type == "text/plain"


async def test_read_static_resources(server: Server) -> None:
    async with Client(server) as client:
        config = await client.request("resources/read", {"uri": "config://app"})
        readme = await client.request("resources/read", {"uri": "notes://readme"})
        logo = await client.request("resources/read", {"uri": "bin://logo"})
    assert config == {
        "contents": [{"uri": "config://app", "mimeType": "application/json", "text": '{"debug":false,"name":"demo"}'}]
    }
    assert readme == {"contents": [{"uri": "notes://readme", "mimeType": "text/plain", "text": "hello, reader"}]}
    [item] = logo["contents"]
    assert item["mimeType"] == "image/png"
    assert base64.b64decode(item["blob"]) == PNG


async def test_template_match_converts_to_int(server: Server) -> None:
    async with Client(server) as client:
        result = await client.read_resource("users://42/profile")
    [item] = result.contents
    assert isinstance(item, wire.TextResourceContents)
    assert item.uri == "users://42/profile"
    assert item.mime_type == "application/json"
    assert item.text == '{"id":42,"id_type":"int"}'


async def test_template_variables_are_percent_decoded(server: Server) -> None:
    async with Client(server) as client:
        spaced = await client.read_resource("files://my%20notes%2Fdraft.txt")
        unicode = await client.read_resource("files://caf%C3%A9")
    assert spaced.contents[0].text == "contents of [my notes/draft.txt]"  # type: ignore[union-attr]
    assert spaced.contents[0].uri == "files://my%20notes%2Fdraft.txt"
    assert unicode.contents[0].text == "contents of [café]"  # type: ignore[union-attr]


async def test_template_query_variables(server: Server) -> None:
    async with Client(server) as client:
        result = await client.read_resource("search://items?q=red%20shoes&limit=5")
    assert result.contents[0].text == "5 results for [red shoes]"  # type: ignore[union-attr]


async def test_resource_function_gets_context(server: Server) -> None:
    async with Client(server) as client:
        result = await client.read_resource("ctx://alpha")
    assert result.contents[0].text.startswith("alpha read in request ")  # type: ignore[union-attr]


async def test_template_variable_of_wrong_type_is_invalid_params(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("users://not-a-number/profile")
        assert (await client.read_resource("users://1/profile")).contents
    assert caught.value.code == -32602
    assert "user_id" in caught.value.message
    assert caught.value.data == {"uri": "users://not-a-number/profile"}


async def test_uri_matching_no_template_is_resource_not_found(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("users://42/settings")
        assert (await client.read_resource("notes://readme")).contents
    assert caught.value.code == -32002
    assert caught.value.data == {"uri": "users://42/settings"}
    assert "users://42/settings" in caught.value.message


def test_template_and_function_must_agree() -> None:
    server = Server("mismatch")
    with pytest.raises(TypeError, match="variables"):

        @server.resource("items://{item_id}")
        def item(other: str) -> str:
            return other

    with pytest.raises(TypeError, match="fixed URI"):

        @server.resource("items://all")
        def items(limit: int) -> str:
            return ""


# =============================================================================================
# prompts
# =============================================================================================


async def test_list_prompts_with_arguments(server: Server) -> None:
    async with Client(server) as client:
        raw = await client.request("prompts/list")
    prompts = {p["name"]: p for p in raw["prompts"]}
    assert prompts["review"] == {
        "name": "review",
        "title": "Code review",
        "description": "Review a piece of code.",
        "arguments": [
            {"name": "code", "required": True, "description": "The code to review."},
            {"name": "language", "required": False, "description": "Its language."},
        ],
    }
    assert prompts["conversation"]["arguments"] == [{"name": "topic", "required": True}]


async def test_get_prompt_renders_messages(server: Server) -> None:
    async with Client(server) as client:
        review = await client.get_prompt("review", {"code": "print(1)", "language": "python"})
        defaulted = await client.get_prompt("review", {"code": "x = 1"})
        chat = await client.request("prompts/get", {"name": "conversation", "arguments": {"topic": "tides"}})
    assert review.description == "Review a piece of code."
    [message] = review.messages
    assert message.role == "user"
    assert isinstance(message.content, wire.TextContent)
    assert message.content.text == "Please review this python code:\nprint(1)"
    assert defaulted.messages[0].content.text.startswith("Please review this python code")  # type: ignore[union-attr]
    roles = [m["role"] for m in chat["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert chat["messages"][0]["content"] == {"type": "text", "text": "Tell me about tides."}
    assert chat["messages"][2]["content"]["type"] == "image"


async def test_get_prompt_missing_required_argument_is_invalid_params(server: Server) -> None:
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("review", {"language": "rust"})
        assert (await client.get_prompt("review", {"code": "fn main() {}"})).messages
    assert caught.value.code == -32602
    assert "code" in caught.value.message


# =============================================================================================
# completion
# =============================================================================================


async def test_completion_for_prompt_argument(server: Server) -> None:
    async with Client(server) as client:
        result = await client.complete({"type": "ref/prompt", "name": "review"}, {"name": "language", "value": "p"})
        nothing = await client.complete({"type": "ref/prompt", "name": "review"}, {"name": "code", "value": ""})
    assert result.completion.values == ["python", "perl", "php"]
    assert result.completion.total == 3
    assert result.completion.has_more is False
    assert nothing.completion.values == []


async def test_completion_for_resource_template(server: Server) -> None:
    async with Client(server) as client:
        result = await client.complete(
            {"type": "ref/resource", "uri": "files://{name}"}, {"name": "name", "value": "rd"}
        )
    assert result.completion.values == ["rd.txt", "rd.md"]


async def test_completion_is_capped_at_100_values() -> None:
    server = Server("many")

    @server.completion()
    async def complete(ref: dict[str, Any], argument: str, value: str, context: dict[str, Any]) -> list[str]:
        return [f"{value}{i}" for i in range(250)]

    async with Client(server) as client:
        assert client.server_declares("completions")
        result = await client.complete({"type": "ref/prompt", "name": "x"}, {"name": "a", "value": "v"})
    assert len(result.completion.values) == 100
    assert result.completion.values[0] == "v0"
    assert result.completion.total == 250
    assert result.completion.has_more is True


# =============================================================================================
# notifications
# =============================================================================================


async def test_resource_updates_reach_only_subscribers(server: Server) -> None:
    seen_a, seen_b = Notifications(), Notifications()
    async with Client(server, notification_callback=seen_a) as a, Client(server, notification_callback=seen_b) as b:
        assert a.server_capabilities["resources"]["subscribe"] is True
        await a.subscribe_resource("config://app")
        await b.subscribe_resource("notes://readme")
        await server.notify_resource_updated("config://app")
        # A tool can trigger it too, from inside a request (here one made by the other client).
        assert (await b.call_tool("touch", {"uri": "config://app"})).text == "touched config://app"
        await server.notify_resource_updated("users://1/profile")  # nobody subscribed: nothing sent
        await seen_a.wait_for(2)
        await a.unsubscribe_resource("config://app")
        await server.notify_resource_updated("config://app")  # a unsubscribed: nothing sent
        await server.notify_resource_updated("notes://readme")
        await seen_b.wait_for(1)
        await a.ping()
        await b.ping()
    updated = ("notifications/resources/updated", {"uri": "config://app"})
    assert seen_a.seen == [updated, updated]
    assert seen_b.seen == [("notifications/resources/updated", {"uri": "notes://readme"})]


async def test_tools_list_changed_reaches_the_client(server: Server) -> None:
    seen = Notifications()
    async with Client(server, notification_callback=seen) as client:
        assert client.server_capabilities["tools"]["listChanged"] is True
        before = {t.name for t in (await client.list_tools()).tools}

        @server.tool()
        def late_addition() -> str:
            return "new"

        await server.notify_tools_changed()
        await seen.wait_for(1)
        after = {t.name for t in (await client.list_tools()).tools}
        assert (await client.call_tool("late_addition")).text == "new"
    assert seen.seen == [("notifications/tools/list_changed", {})]
    assert after - before == {"late_addition"}


async def test_list_changed_reaches_every_connected_client(server: Server) -> None:
    seen_a, seen_b = Notifications(), Notifications()
    async with Client(server, notification_callback=seen_a) as a, Client(server, notification_callback=seen_b) as b:
        await server.notify_prompts_changed()
        await server.notify_resources_changed()
        await seen_a.wait_for(2)
        await seen_b.wait_for(2)
        await a.ping()
        await b.ping()
    expected = ["notifications/prompts/list_changed", "notifications/resources/list_changed"]
    assert seen_a.methods() == expected
    assert seen_b.methods() == expected


# =============================================================================================
# pagination
# =============================================================================================


def paged_server() -> Server:
    server = Server("paged", page_size=2)
    for i in range(5):

        def tool(n: int = i) -> int:
            return n

        server.tool(name=f"tool_{i}")(tool)
        server.prompt(name=f"prompt_{i}")(lambda: "hi")
        server.resource(f"res://{i}", name=f"res_{i}")(lambda: "x")
    return server


async def test_pagination_cursor_chain_returns_everything() -> None:
    server = paged_server()
    async with Client(server) as client:
        names: list[str] = []
        pages = 0
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor)
            pages += 1
            assert len(page.tools) <= 2
            names += [tool.name for tool in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                break
        prompts = await client.list_prompts()
        resources = await client.list_resources()
    assert names == [f"tool_{i}" for i in range(5)]
    assert pages == 3
    assert len(prompts.prompts) == 2 and prompts.next_cursor is not None
    assert len(resources.resources) == 2 and resources.next_cursor is not None


async def test_prompts_and_resources_paginate_too() -> None:
    server = paged_server()
    async with Client(server) as client:
        prompt_names: list[str] = []
        cursor: str | None = None
        while True:
            page = await client.list_prompts(cursor)
            prompt_names += [p.name for p in page.prompts]
            if (cursor := page.next_cursor) is None:
                break
        uris: list[str] = []
        while True:
            rpage = await client.list_resources(cursor)
            uris += [r.uri for r in rpage.resources]
            if (cursor := rpage.next_cursor) is None:
                break
    assert prompt_names == [f"prompt_{i}" for i in range(5)]
    assert uris == [f"res://{i}" for i in range(5)]


@pytest.mark.parametrize("cursor", ["garbage", "!!!not base64!!!", "bzotMQ==", "", 12])
async def test_garbage_cursor_is_invalid_params(cursor: Any) -> None:
    server = paged_server()
    async with Client(server) as client:
        with pytest.raises(MCPError) as caught:
            await client.request("tools/list", {"cursor": cursor})
        assert len((await client.list_tools()).tools) == 2
    assert caught.value.code == -32602
