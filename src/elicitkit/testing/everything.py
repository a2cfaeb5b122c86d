"""The conformance "everything server", written with elicitkit's decorator framework.

The official MCP conformance suite (``@modelcontextprotocol/conformance``, server mode) expects a
server offering a fixed set of tools, resources and prompts with known names and answers. This
module is that server for the legacy protocol eras (2025-06-18 and 2025-11-25), and doubles as a
showcase of the framework: every tool is a plain function whose type hints are its input schema.

Run it with::

    python -m elicitkit.testing.everything --port 3001     # http://127.0.0.1:3001/mcp

and point the suite at it::

    node .../conformance/dist/index.js server --url http://localhost:3001/mcp
"""

from __future__ import annotations

import argparse
import io
import json
import os
import struct
import wave
import zlib
from typing import Annotated, Any, Literal

import anyio
from pydantic import BaseModel, Field

from elicitkit import AcceptedElicitation, Context, ElicitationResult, FormRequest, Server, TitledEnum, ToolError
from elicitkit.content import Audio, EmbeddedResource, Image, Message, UserMessage
from elicitkit.elicitation import LEGACY_ENUM_NAMES
from elicitkit.elicitation.schema import form_for
from elicitkit.protocol.errors import INTERNAL_ERROR, MCPError
from elicitkit.protocol.modern import missing_capability
from elicitkit.protocol.versions import MODERN_2026
from elicitkit.server.tasks import InMemoryTaskStore, SQLiteTaskStore, TaskStore
from elicitkit.server.tasks.serving import ENV_TASK_DB
from elicitkit.server.tools import make_tool

__all__ = ["JSON_SCHEMA_2020_12", "PNG", "WAV", "build_server", "main", "server"]


# ----------------------------------------------------------------------------- media


def _tiny_png() -> bytes:
    """A valid 1x1 PNG (one opaque red pixel), built by hand: signature, IHDR, IDAT, IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit depth, RGB, no interlace
    scanline = b"\x00" + b"\xff\x00\x00"  # filter byte "none", then one RGB pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(scanline)) + chunk(b"IEND", b"")


def _tiny_wav() -> bytes:
    """A valid WAV: 10 ms of silence, 8 kHz, mono, 16-bit."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 80)
    return buffer.getvalue()


PNG = _tiny_png()
WAV = _tiny_wav()

# The tool schema of the ``json-schema-2020-12`` scenario: it must reach tools/list verbatim.
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

# The elicitation forms, as Python types: the framework renders each into its requestedSchema.


class UserResponse(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


class DefaultsForm(BaseModel):
    """One field of each primitive kind, every one with a default (SEP-1034)."""

    name: str = Field("John Doe", description="User name")
    age: int = Field(30, description="User age")
    score: float = Field(95.5, description="User score")
    status: Literal["active", "inactive", "pending"] = Field("active", description="User status")
    verified: bool = Field(True, description="Verification status")


class SingleChoice(TitledEnum):
    VALUE1 = "value1", "First Option"
    VALUE2 = "value2", "Second Option"
    VALUE3 = "value3", "Third Option"


class LegacyChoice(TitledEnum):
    OPT1 = "opt1", "Option One"
    OPT2 = "opt2", "Option Two"
    OPT3 = "opt3", "Option Three"


class MultiChoice(TitledEnum):
    VALUE1 = "value1", "First Choice"
    VALUE2 = "value2", "Second Choice"
    VALUE3 = "value3", "Third Choice"


Untitled = Literal["option1", "option2", "option3"]


class EnumsForm(BaseModel):
    """The five enum shapes of SEP-1330, each spelled as a Python type."""

    untitled_single: Untitled | None = Field(None, alias="untitledSingle", description="Pick one (untitled)")
    titled_single: SingleChoice | None = Field(None, alias="titledSingle", description="Pick one (titled)")
    legacy_enum: Annotated[LegacyChoice, LEGACY_ENUM_NAMES] | None = Field(
        None, alias="legacyEnum", description="Pick one (legacy enumNames)"
    )
    untitled_multi: list[Untitled] | None = Field(
        None, alias="untitledMulti", min_length=1, max_length=3, description="Pick several (untitled)"
    )
    titled_multi: list[MultiChoice] | None = Field(
        None, alias="titledMulti", min_length=1, max_length=3, description="Pick several (titled)"
    )


STEP_DELAY = 0.05  # seconds between the notifications of the logging and progress tools


def _answer_text(result: ElicitationResult[Any]) -> str:
    """``action=..., content={...}`` for an elicitation outcome."""
    return f"action={result.action.value}, content={json.dumps(result.content or {})}"


# ----------------------------------------------------------------------------- the server


def build_server() -> Server:
    """A fresh everything-server (each call registers everything again on a new ``Server``)."""
    server = Server(
        "elicitkit-everything-server",
        "1.0.0",
        instructions="The MCP conformance everything-server, written with elicitkit.",
        task_store=_task_store(),
    )

    # -- tools ------------------------------------------------------------------------
    # Registration order is tools/list order; test_simple_text must come first.

    @server.tool()
    def test_simple_text() -> str:
        """Answer with a fixed line of text."""
        return "This is a simple text response for testing."

    @server.tool()
    def test_image_content() -> Image:
        """Answer with a 1x1 PNG image."""
        return Image(data=PNG, mime_type="image/png")

    @server.tool()
    def test_audio_content() -> Audio:
        """Answer with a short WAV clip of silence."""
        return Audio(data=WAV, mime_type="audio/wav")

    @server.tool()
    def test_embedded_resource() -> EmbeddedResource:
        """Answer with a text resource embedded in the result."""
        return EmbeddedResource(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )

    @server.tool()
    def test_multiple_content_types() -> list[str | Image | EmbeddedResource]:
        """Answer with text, an image and an embedded JSON resource, in that order."""
        return [
            "Multiple content types test:",
            Image(data=PNG, mime_type="image/png"),
            EmbeddedResource(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text='{"test":"data","value":123}',
            ),
        ]

    @server.tool()
    async def test_tool_with_logging(ctx: Context) -> str:
        """Send three info-level log notifications, 50 ms apart, while running."""
        await ctx.info("Tool execution started")
        await anyio.sleep(STEP_DELAY)
        await ctx.info("Tool processing data")
        await anyio.sleep(STEP_DELAY)
        await ctx.info("Tool execution completed")
        return "Tool with logging executed successfully"

    @server.tool()
    def test_error_handling() -> str:
        """Always fail: a tool error is an ``isError`` result, not a JSON-RPC error."""
        raise ToolError("This tool intentionally returns an error for testing")

    @server.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Report progress 0, 50 and 100 (of 100), 50 ms apart, to the caller's progress token."""
        await ctx.report_progress(0, 100, "Starting")
        await anyio.sleep(STEP_DELAY)
        await ctx.report_progress(50, 100, "Halfway")
        await anyio.sleep(STEP_DELAY)
        await ctx.report_progress(100, 100, "Done")
        return "Tool with progress executed successfully"

    @server.tool()
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Ask the client's LLM to answer ``prompt`` (``sampling/createMessage``) and return its reply.

        Args:
            prompt: The prompt to send to the LLM.
        """
        if not ctx.client_supports("sampling"):
            raise ToolError("This client does not support sampling (no 'sampling' capability)")
        result = await ctx.sample(prompt, max_tokens=100)
        return f"LLM response: {_sample_text(result)}"

    @server.tool()
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Ask the user for a username and an email address (``elicitation/create``).

        Args:
            message: The message to show the user.
        """
        result = await ctx.elicit(message, UserResponse)
        return f"User response: {_answer_text(result)}"

    @server.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Ask for five fields that all carry defaults: string, integer, number, enum, boolean (SEP-1034)."""
        result = await ctx.elicit("Please review and update the form fields with defaults", DefaultsForm)
        return f"Elicitation completed: {_answer_text(result)}"

    @server.tool()
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Ask with all five enum shapes: untitled/titled single and multi select, and legacy enumNames (SEP-1330)."""
        result = await ctx.elicit("Please select options from the enum fields", EnumsForm)
        return f"Elicitation completed: {_answer_text(result)}"

    @server.tool()
    async def test_reconnection(ctx: Context) -> str:
        """Drop this call's SSE connection mid-call, then answer on the stream the client resumes (SEP-1699).

        The client reconnects with GET and ``Last-Event-ID`` and receives the result there.
        """
        ctx.close_sse_stream(retry_ms=200)
        await anyio.sleep(0.3)
        return "Reconnection test completed successfully"

    # A tool whose input schema is written by hand (JSON Schema 2020-12 keywords the type hints
    # cannot express): register the function, then replace the generated schema verbatim.
    def json_schema_2020_12_tool() -> str:
        """Tool with JSON Schema 2020-12 features."""
        return "ok"

    schema_tool = make_tool(json_schema_2020_12_tool)
    schema_tool.input_schema = JSON_SCHEMA_2020_12
    server.add_tool(schema_tool)

    # -- resources --------------------------------------------------------------------

    @server.resource("test://static-text", name="Static Text Resource", mime_type="text/plain")
    def static_text() -> str:
        """A static text resource for testing."""
        return "This is the content of the static text resource."

    @server.resource("test://static-binary", name="Static Binary Resource", mime_type="image/png")
    def static_binary() -> bytes:
        """A static binary resource (a 1x1 PNG) for testing."""
        return PNG

    @server.resource("test://watched-resource", name="Watched Resource", mime_type="text/plain")
    def watched_resource() -> str:
        """A resource clients can subscribe to."""
        return "Watched resource content"

    @server.resource("test://template/{id}/data", name="Resource Template", mime_type="application/json")
    def template_data(id: str) -> str:
        """Data for any id, as JSON."""
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":"))

    # -- prompts ----------------------------------------------------------------------

    @server.prompt()
    def test_simple_prompt() -> Message:
        """A simple prompt without arguments."""
        return UserMessage("This is a simple prompt for testing.")

    @server.prompt()
    def test_prompt_with_arguments(arg1: str, arg2: str) -> Message:
        """A prompt with two required arguments.

        Args:
            arg1: First test argument.
            arg2: Second test argument.
        """
        return UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")

    @server.prompt()
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:
        """A prompt that embeds a resource.

        Args:
            resourceUri: URI of the resource to embed.
        """
        return [
            UserMessage(
                EmbeddedResource(uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing.")
            ),
            UserMessage("Please process the embedded resource above."),
        ]

    @server.prompt()
    def test_prompt_with_image() -> list[Message]:
        """A prompt that includes an image."""
        return [UserMessage(Image(data=PNG, mime_type="image/png")), UserMessage("Please analyze the image above.")]

    # -- completion -------------------------------------------------------------------

    @server.completion()
    def complete(ref: dict[str, Any], argument: str | None, value: str, context: dict[str, Any]) -> list[str]:
        """Suggest values for prompt and template arguments: a few fixed words that start with ``value``."""
        words = ["paris", "park", "party", "test", "testing"]
        return [word for word in words if word.startswith(value)]

    _add_2026_tools(server)
    _add_task_tools(server)
    return server


# ----------------------------------------------------------------------------- 2026-07-28


class Name(BaseModel):
    name: str


class Confirm(BaseModel):
    ok: bool


class Color(BaseModel):
    color: str


class UserContext(BaseModel):
    context: str


def _sample_text(result: Any) -> str:
    content = result.get("content") if isinstance(result, dict) else None
    text = content.get("text") if isinstance(content, dict) else None
    return text if isinstance(text, str) else json.dumps(content)


def _roots_text(result: Any) -> str:
    roots = result.get("roots") if isinstance(result, dict) else None
    return ", ".join(str(r.get("uri")) for r in roots or [] if isinstance(r, dict)) or "no roots"


def _hello(outcome: ElicitationResult[Any]) -> str:
    if isinstance(outcome, AcceptedElicitation):
        return f"Hello, {outcome.data.name}!"
    return f"No name given ({outcome.action.value})."


def _add_2026_tools(server: Server) -> None:
    """Tools the 2026-07-28 scenarios call. They ask through the same Context API as on 2025
    connections; on a 2026 connection each question becomes an InputRequiredResult round."""

    @server.tool()
    async def test_missing_capability(ctx: Context) -> str:
        """Needs the client's sampling capability: -32021 (with requiredCapabilities) without it."""
        if not ctx.client_supports("sampling"):
            raise missing_capability({"sampling": {}})
        return "sampling capability present"

    @server.tool()
    async def test_streaming_elicitation(ctx: Context) -> str:
        """Asks for a name; on 2026 that is an InputRequiredResult, never a request on the stream."""
        return _hello(await ctx.elicit("What is your name?", Name))

    @server.tool()
    async def test_custom_header(
        value: Annotated[
            str, Field(description="Mirrored in Mcp-Param-Value", json_schema_extra={"x-mcp-header": "Value"})
        ],
    ) -> str:
        """Echo an argument that HTTP clients also send as the ``Mcp-Param-Value`` header (checked)."""
        return f"value={value}"

    @server.tool()
    async def test_logging_tool(ctx: Context) -> str:
        """Logs one line (sent only if this request asked for a log level) and answers."""
        await ctx.info("test_logging_tool ran")
        return "logging tool done"

    @server.tool()
    async def test_input_required_result_elicitation(ctx: Context) -> str:
        """Asks for a name under the key ``user_name``; answers ``Hello, <name>!``."""
        return _hello(await ctx.elicit("What is your name?", Name, key="user_name"))

    @server.tool()
    async def test_input_required_result_sampling(ctx: Context) -> str:
        """Asks the client's model a question (key ``capital_question``)."""
        result = await ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
        return f"Sampled: {_sample_text(result)}"

    @server.tool()
    async def test_input_required_result_list_roots(ctx: Context) -> str:
        """Asks for the client's roots (key ``client_roots``)."""
        roots = await ctx.request_input("roots/list", {}, key="client_roots")
        return f"Roots: {_roots_text(roots)}"

    @server.tool()
    async def test_input_required_result_request_state(ctx: Context) -> str:
        """Asks to confirm (key ``confirm``); the sealed requestState is checked on the retry."""
        outcome = await ctx.elicit("Please confirm", Confirm, key="confirm")
        ok = isinstance(outcome, AcceptedElicitation) and outcome.data.ok
        return f"state-ok: confirmed={ok}"

    @server.tool()
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
        """Asks for a name, a sample and the roots in one round."""
        name_params = FormRequest("What is your name?", form_for(Name).schema).to_params(
            ctx.protocol_version or MODERN_2026
        )
        sample_params = {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
            "maxTokens": 50,
        }
        answers = await ctx.request_inputs(
            {
                "user_name": ("elicitation/create", name_params),
                "greeting": ("sampling/createMessage", sample_params),
                "client_roots": ("roots/list", {}),
            }
        )
        name = (answers["user_name"].get("content") or {}).get("name", "?")
        return (
            f"name={name}; greeting={_sample_text(answers['greeting'])}; roots={_roots_text(answers['client_roots'])}"
        )

    @server.tool()
    async def test_input_required_result_multi_round(ctx: Context) -> str:
        """Two rounds: a name (``step1``), then a favourite colour (``step2``)."""
        first = await ctx.elicit("What is your name?", Name, key="step1")
        second = await ctx.elicit("What is your favorite color?", Color, key="step2")
        name = first.data.name if isinstance(first, AcceptedElicitation) else "?"
        color = second.data.color if isinstance(second, AcceptedElicitation) else "?"
        return f"{name} likes {color}"

    @server.tool()
    async def test_input_required_result_tampered_state(ctx: Context) -> str:
        """Asks once; a retry with an altered requestState is refused with -32602."""
        outcome = await ctx.elicit("Please confirm", Confirm, key="confirm")
        return f"confirmed={isinstance(outcome, AcceptedElicitation) and outcome.data.ok}"

    @server.tool()
    async def test_input_required_result_capabilities(ctx: Context) -> str:
        """Asks only for what this request's client declared it can answer."""
        wanted: dict[str, tuple[str, dict[str, Any]]] = {}
        if ctx.client_supports("elicitation"):
            wanted["user_name"] = (
                "elicitation/create",
                FormRequest("What is your name?", form_for(Name).schema).to_params(ctx.protocol_version or MODERN_2026),
            )
        if ctx.client_supports("sampling"):
            wanted["greeting"] = (
                "sampling/createMessage",
                {"messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}], "maxTokens": 50},
            )
        if ctx.client_supports("roots"):
            wanted["client_roots"] = ("roots/list", {})
        answers = await ctx.request_inputs(wanted)
        return f"answered: {', '.join(sorted(answers)) or 'nothing'}"

    @server.prompt()
    async def test_input_required_result_prompt(ctx: Context) -> str:
        """A prompt that first asks for some context (key ``user_context``)."""
        outcome = await ctx.elicit("What context should the prompt use?", UserContext, key="user_context")
        context = outcome.data.context if isinstance(outcome, AcceptedElicitation) else "none"
        return f"Prompt with context: {context}"


def _task_store() -> TaskStore:
    """SQLite at ``$ELICITKIT_TASK_DB`` when set (the restart tests), else in memory: a test
    server leaves no database behind."""
    path = os.environ.get(ENV_TASK_DB)
    return SQLiteTaskStore(path) if path else InMemoryTaskStore()


class ConfirmDelete(BaseModel):
    confirm: bool


TASK_POLL_MS = 200  # the suite polls every 200 ms anyway


def _add_task_tools(server: Server) -> None:
    """The fixtures of the suite's ``tasks-*`` scenarios (Tasks extension, SEP-2663)."""

    @server.tool()
    def greet(name: str) -> str:
        """Sync only: ``Hello, {name}!``."""
        return f"Hello, {name}!"

    @server.tool()
    async def test_trigger_tool_change() -> str:
        """Announces a tools/list change (to handshake sessions and subscriptions/listen streams)."""
        await server.notify_tools_changed()
        return "tools/list_changed sent"

    @server.tool()
    async def test_trigger_prompt_change() -> str:
        """Announces a prompts/list change (to handshake sessions and subscriptions/listen streams)."""
        await server.notify_prompts_changed()
        return "prompts/list_changed sent"

    @server.tool(task="optional", task_poll_interval_ms=TASK_POLL_MS)
    async def slow_compute(seconds: float = 1, label: str = "") -> str:
        """Sleeps ``seconds``, then answers; cancelled while it sleeps, the task ends ``cancelled``."""
        await anyio.sleep(seconds)
        return f"computed {label or 'result'} after {seconds:g}s"

    @server.tool(task="required", task_poll_interval_ms=TASK_POLL_MS)
    async def failing_job() -> str:
        """Runs only as a task; after about a second it reports a tool error (``isError``)."""
        await anyio.sleep(1)
        raise ToolError("failing_job failed, as it always does")

    @server.tool(task="optional", task_poll_interval_ms=TASK_POLL_MS)
    async def protocol_error_job() -> str:
        """Fails with a JSON-RPC error (the task ends ``failed``)."""
        raise MCPError(INTERNAL_ERROR, "protocol_error_job: an internal failure, on purpose")

    @server.tool(task="optional", task_poll_interval_ms=TASK_POLL_MS)
    async def confirm_delete(filename: str, ctx: Context) -> str:
        """Asks to confirm deleting ``filename`` (one elicitation), then answers."""
        outcome = await ctx.elicit(f"Delete {filename}?", ConfirmDelete, key="confirm")
        confirmed = isinstance(outcome, AcceptedElicitation) and outcome.data.confirm
        return f"{filename}: {'deleted' if confirmed else 'kept'}"

    @server.tool(task="optional", task_poll_interval_ms=TASK_POLL_MS)
    async def multi_input(ctx: Context) -> str:
        """Two elicitations open at once (a name and a confirmation), answered in any order."""
        version = ctx.protocol_version or MODERN_2026
        name_schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        confirm_schema = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
        answers = await ctx.request_inputs(
            {
                "name": ("elicitation/create", FormRequest("Your name?", name_schema).to_params(version)),
                "confirm": ("elicitation/create", FormRequest("Confirm?", confirm_schema).to_params(version)),
            }
        )
        name = (answers["name"].get("content") or {}).get("name", "?")
        confirmed = (answers["confirm"].get("content") or {}).get("confirm", False)
        return f"name={name}; confirmed={confirmed}"

    @server.tool(task="required", ask_before_task=True, task_poll_interval_ms=TASK_POLL_MS)
    async def test_tool_with_task(ctx: Context) -> str:
        """Asks for a name in the call itself (key ``user_name``), then carries on as a task."""
        outcome = await ctx.elicit("What is your name?", Name, key="user_name")
        await ctx.run_as_task()
        name = outcome.data.name if isinstance(outcome, AcceptedElicitation) else "stranger"
        return f"Hello, {name}! (finished as a task)"


server = build_server()


def main(argv: list[str] | None = None) -> None:
    """``python -m elicitkit.testing.everything [--host H] [--port P]``: serve at ``http://H:P/mcp``."""
    parser = argparse.ArgumentParser(prog="python -m elicitkit.testing.everything", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=3001, help="port to listen on (default 3001)")
    args = parser.parse_args(argv)
    anyio.run(lambda: server.run_async("http", host=args.host, port=args.port))


if __name__ == "__main__":
    main()
