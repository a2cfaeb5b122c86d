"""The benchmark server written with the official ``mcp`` SDK (2.x), one per scenario.

* ``echo`` (S0): the low-level ``Server`` (constructor ``on_list_tools`` / ``on_call_tool``
  handlers returning the SDK's typed result models). Why the low-level ``Server`` rather than
  ``MCPServer`` here: it is the SDK's thinnest documented path (no signature introspection, no
  argument model, no output-schema handling), so it is the fairest opponent for elicitkit's
  ``LowLevelServer``.
* ``form`` (S1): ``MCPServer`` with a decorated tool ``book(date, ctx)`` that asks with
  ``ctx.elicit(message, Booking)``, the SDK's documented way to elicit (the low-level
  equivalent, ``ctx.session.elicit_form(...)`` plus validating the answer by hand, is what
  ``ctx.elicit`` does inside).
* ``resolver`` (S2): ``MCPServer`` with ``booking: Annotated[Booking, Resolve(ask_booking)]``
  and ``ask_booking`` returning ``Elicit(...)`` (``mcp.server.mcpserver``). On a 2026-07-28
  request the SDK batches the question into an ``InputRequiredResult`` with a sealed
  ``requestState`` and resumes when the client retries; this is its multi-round-trip API.

stdio: ``mcp.server.stdio.stdio_server`` + the low-level ``Server.run`` (for ``MCPServer``
its own low-level server, as ``MCPServer.run_stdio_async`` does). HTTP: the SDK's
``streamable_http_app`` (stateful sessions for handshake clients, the stateless path for
2026-07-28 requests, DNS-rebinding protection on, as for any loopback host) under uvicorn
with the same settings as the elicitkit server. ``json_response=True`` (one JSON body per
answer, as elicitkit does) for ``echo`` and ``resolver``; ``form`` needs the SSE default,
since in JSON-response mode the SDK cannot send a request (the question) mid-call.

``build_server(scenario)`` is imported by ``benchmarks/run.py`` for the in-memory transport.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common

warnings.simplefilter("ignore")  # the SDK flags some handshake-era features as deprecated for 2026

ToolFn = Callable[[ServerRequestContext[Any], dict[str, Any]], Awaitable[types.CallToolResult]]

# ----------------------------------------------------------------------------- S0: echo

ECHO_TOOL = types.Tool(
    name="echo",
    description="Return the text argument unchanged.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)


async def echo(ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=arguments["text"])])


def echo_server() -> Server[Any]:
    tools: dict[str, tuple[types.Tool, ToolFn]] = {"echo": (ECHO_TOOL, echo)}
    listing = types.ListToolsResult(tools=[definition for definition, _ in tools.values()])

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        entry = tools.get(params.name)
        if entry is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {params.name!r}")
        return await entry[1](ctx, params.arguments or {})

    return Server("bench-official", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


# ----------------------------------------------------------------------------- S1 and S2: one form question


class Booking(BaseModel):
    """The 3-field form of S1 and S2 (the same model in servers/elicitkit_server.py)."""

    name: str = Field(description="Name for the booking")
    party_size: int = Field(description="How many people")
    confirm: bool = Field(description="Confirm the booking?")


def question(date: str) -> str:
    return f"Book a table on {date}?"


def booked(date: str, booking: Booking) -> str:
    if not booking.confirm:
        return f"not booked on {date}"
    return f"booked {booking.party_size} for {booking.name} on {date}"


def form_server() -> MCPServer:
    server = MCPServer(name="bench-official", version="1.0.0", log_level="WARNING")

    @server.tool(description="Book a table: asks for the name, the party size and a confirmation.")
    async def book(date: str, ctx: Context) -> str:
        answer = await ctx.elicit(question(date), Booking)
        if answer.action == "accept":
            return booked(date, answer.data)
        return f"no booking: {answer.action}"

    return server


def ask_booking(date: str) -> Elicit[Booking]:
    return Elicit(question(date), Booking)


def resolver_server() -> MCPServer:
    server = MCPServer(name="bench-official", version="1.0.0", log_level="WARNING")

    @server.tool(description="Book a table: a resolver asks for the name, the party size and a confirmation.")
    async def book(date: str, booking: Annotated[Booking, Resolve(ask_booking)]) -> str:
        return booked(date, booking)

    return server


SCENARIOS: dict[str, Callable[[], Server[Any] | MCPServer]] = {
    "echo": echo_server,
    "form": form_server,
    "resolver": resolver_server,
}
JSON_RESPONSE = {"echo": True, "form": False, "resolver": True}


def build_server(scenario: str = "echo") -> Server[Any] | MCPServer:
    return SCENARIOS[scenario]()


def lowlevel(server: Server[Any] | MCPServer) -> Server[Any]:
    return server._lowlevel_server if isinstance(server, MCPServer) else server


# ----------------------------------------------------------------------------- entry point


async def serve_stdio(server: Server[Any] | MCPServer) -> None:
    from mcp.server.stdio import stdio_server

    low = lowlevel(server)
    async with stdio_server() as (read_stream, write_stream):
        await low.run(read_stream, write_stream, low.create_initialization_options())


async def serve_http(server: Server[Any] | MCPServer, host: str, port: int, json_response: bool) -> None:
    import uvicorn

    app = server.streamable_http_app(json_response=json_response, host=host)
    userver = uvicorn.Server(uvicorn.Config(app, host=host, port=port, **_common.UVICORN_SETTINGS))
    async with anyio.create_task_group() as tg:
        tg.start_soon(userver.serve)
        while not userver.started:  # noqa: ASYNC110 - uvicorn has no "started" event to wait on
            await anyio.sleep(0.01)
        bound_port = userver.servers[0].sockets[0].getsockname()[1]
        _common.announce(f"http://{host}:{bound_port}/mcp")
        await _common.wait_for_stdin_eof()
        userver.should_exit = True


def main() -> None:
    args = _common.parse_args()
    server = build_server(args.scenario)
    with _common.profiled(args.profile):
        if args.mode == "stdio":
            anyio.run(serve_stdio, server)
        else:
            anyio.run(serve_http, server, args.host, args.port, JSON_RESPONSE[args.scenario])


if __name__ == "__main__":
    main()
