"""The benchmark server written with the official ``mcp`` SDK (2.x): its low-level ``Server``.

Why the low-level ``Server`` rather than ``MCPServer``: it is the SDK's thinnest documented
path (constructor ``on_list_tools`` / ``on_call_tool`` handlers receiving validated params,
no signature introspection, no argument model, no output-schema handling), so it is the
fairest opponent for elicitkit's ``LowLevelServer``. Handlers return the SDK's typed result
models, as the SDK's docs show.

stdio: ``mcp.server.stdio.stdio_server`` + ``Server.run``. HTTP: ``Server.streamable_http_app``
(stateful sessions, ``json_response=True`` so a plain tool call is answered with one JSON body,
like elicitkit does; DNS-rebinding protection on, as for any loopback host) under uvicorn with
the same settings as the elicitkit server.

``build_server(scenario)`` is imported by ``benchmarks/run.py`` for the in-memory transport.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common

ToolFn = Callable[[ServerRequestContext[Any], dict[str, Any]], Awaitable[types.CallToolResult]]

# ----------------------------------------------------------------------------- scenarios
# One entry per scenario: the tools the server offers, as (definition, implementation).

ECHO_TOOL = types.Tool(
    name="echo",
    description="Return the text argument unchanged.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)


async def echo(ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=arguments["text"])])


SCENARIOS: dict[str, dict[str, tuple[types.Tool, ToolFn]]] = {
    "echo": {"echo": (ECHO_TOOL, echo)},
}


def build_server(scenario: str = "echo") -> Server[Any]:
    tools = SCENARIOS[scenario]
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


# ----------------------------------------------------------------------------- entry point


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(server: Server[Any], host: str, port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(json_response=True, host=host)
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
            anyio.run(serve_http, server, args.host, args.port)


if __name__ == "__main__":
    main()
