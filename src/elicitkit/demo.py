"""The demo behind the README's first command: one tool, called over stdio and over HTTP.

Run ``python -m elicitkit.demo``. It starts a small server with an ``add`` tool, calls it with
the :class:`~elicitkit.Client` over stdio (a child process) and over Streamable HTTP (uvicorn
on a free loopback port), and prints every JSON-RPC message that goes by.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import orjson

from elicitkit import Client, LowLevelServer, MCPError, RequestContext
from elicitkit.protocol.errors import INVALID_PARAMS
from elicitkit.transports.http_server import serve_http_background
from elicitkit.transports.stdio import serve_stdio

server = LowLevelServer("elicitkit-demo", "0.1.0", instructions="A calculator with one tool.")

ADD_TOOL = {
    "name": "add",
    "description": "Add two numbers.",
    "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
}


@server.request_handler("tools/list")
async def list_tools(ctx: RequestContext) -> dict[str, Any]:
    return {"tools": [ADD_TOOL]}


@server.request_handler("tools/call")
async def call_tool(ctx: RequestContext) -> dict[str, Any]:
    if ctx.params.get("name") != "add":
        raise MCPError(INVALID_PARAMS, f"unknown tool {ctx.params.get('name')!r}")
    args = ctx.params.get("arguments") or {}
    a, b = args.get("a"), args.get("b")
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not (_is_number(a) and _is_number(b)):
        return {"content": [{"type": "text", "text": "a and b must be numbers"}], "isError": True}
    await ctx.report_progress(1, 1, "added")
    return {"content": [{"type": "text", "text": f"{a} + {b} = {a + b}"}], "structuredContent": {"sum": a + b}}


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _show(direction: str, message: dict[str, Any]) -> None:
    arrow = "client -> server" if direction == "send" else "server -> client"
    text = orjson.dumps(message).decode()
    if len(text) > 160:
        text = text[:157] + "..."
    print(f"  {arrow}  {text}", flush=True)


async def _session(target: Any, label: str) -> None:
    print(f"\n== {label}", flush=True)
    async with Client(target, trace=_show) as client:
        print(f"  (connected to {client.server_info.get('name')}, protocol {client.protocol_version})", flush=True)
        tools = await client.list_tools()
        print(f"  (tools: {', '.join(t.name for t in tools.tools)})", flush=True)
        result = await client.call_tool("add", {"a": 2, "b": 40}, progress_callback=lambda p, t, m: None)
        print(f"  => {result.text}", flush=True)


async def main() -> None:
    await _session([sys.executable, "-m", "elicitkit.demo", "--serve-stdio"], "stdio (the server is a child process)")
    async with serve_http_background(server) as http:
        await _session(http.url, f"Streamable HTTP at {http.url}")
    print("\ndemo finished", flush=True)


if __name__ == "__main__":
    if "--serve-stdio" in sys.argv:
        anyio.run(serve_stdio, server)
    else:
        anyio.run(main)
