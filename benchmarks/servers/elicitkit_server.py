"""The benchmark server written with elicitkit: a ``LowLevelServer`` with raw dict handlers.

``build_server(scenario)`` is imported by ``benchmarks/run.py`` for the in-memory transport;
run as a script it serves the same server over stdio or Streamable HTTP (see ``_common.py``).
HTTP uses ``serve_http_background`` (uvicorn, log level warning, no access log, JSON answers).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from elicitkit import LowLevelServer, MCPError, RequestContext
from elicitkit.protocol.errors import INVALID_PARAMS

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common

ToolFn = Callable[[RequestContext, dict[str, Any]], Awaitable[dict[str, Any]]]

# ----------------------------------------------------------------------------- scenarios
# One entry per scenario: the tools the server offers, as (wire definition, implementation).
# S1 (a tool eliciting a 3-field form) and S2 (the 2026 multi-round-trip variant) go here.

ECHO_TOOL = {
    "name": "echo",
    "description": "Return the text argument unchanged.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


async def echo(ctx: RequestContext, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": arguments["text"]}]}


SCENARIOS: dict[str, dict[str, tuple[dict[str, Any], ToolFn]]] = {
    "echo": {"echo": (ECHO_TOOL, echo)},
}


def build_server(scenario: str = "echo") -> LowLevelServer:
    tools = SCENARIOS[scenario]
    server = LowLevelServer("bench-elicitkit", "1.0.0")
    listing = {"tools": [definition for definition, _ in tools.values()]}

    @server.request_handler("tools/list")
    async def list_tools(ctx: RequestContext) -> dict[str, Any]:
        return listing

    @server.request_handler("tools/call")
    async def call_tool(ctx: RequestContext) -> dict[str, Any]:
        name = ctx.params.get("name")
        entry = tools.get(name) if isinstance(name, str) else None
        if entry is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}")
        return await entry[1](ctx, ctx.params.get("arguments") or {})

    return server


# ----------------------------------------------------------------------------- entry point


async def serve_http(server: LowLevelServer, host: str, port: int) -> None:
    from elicitkit.transports.http_server import serve_http_background

    # serve_http_background already runs uvicorn with _common.UVICORN_SETTINGS.
    async with serve_http_background(server, host=host, port=port) as handle:
        _common.announce(handle.url)
        await _common.wait_for_stdin_eof()


def main() -> None:
    args = _common.parse_args()
    server = build_server(args.scenario)
    with _common.profiled(args.profile):
        if args.mode == "stdio":
            from elicitkit.transports.stdio import serve_stdio

            anyio.run(serve_stdio, server)
        else:
            anyio.run(serve_http, server, args.host, args.port)


if __name__ == "__main__":
    main()
