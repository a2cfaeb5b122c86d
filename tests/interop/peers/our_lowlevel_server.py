"""A server written with elicitkit's ``LowLevelServer``: the peer the official SDK's client must talk to.

Usage::

    python our_lowlevel_server.py stdio
    python our_lowlevel_server.py http PORT   # Streamable HTTP at http://127.0.0.1:PORT/mcp

Tools:

* ``echo {text}``: answers the text, plus ``structuredContent`` ``{"echo": text, "length": n}``.
* ``countdown {n}``: reports progress n times, then answers ``"liftoff after n"``.
* ``chatty {message}``: logs twice (info, warning) through ``ctx.log``, then echoes.
* ``ping_client``: pings the client and answers ``"client answered ping with {}"``.
* ``ask {question}``: sends ``elicitation/create`` to the client and answers with what came back,
  as JSON text and as ``structuredContent``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import anyio.lowlevel

from elicitkit import MCPError
from elicitkit.compat import LowLevelServer, RequestContext

INVALID_PARAMS = -32602

server = LowLevelServer("elicitkit-peer", "1.2.3", instructions="written with elicitkit")

TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "outputSchema": {
            "type": "object",
            "properties": {"echo": {"type": "string"}, "length": {"type": "integer"}},
            "required": ["echo", "length"],
        },
    },
    {
        "name": "countdown",
        "description": "Report progress n times.",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    },
    {
        "name": "chatty",
        "description": "Log, then echo.",
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    },
    {
        "name": "ping_client",
        "description": "Ping the client from inside a tool call.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "ask",
        "description": "Ask the user a question through elicitation.",
        "inputSchema": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
    },
]

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "description": "Your answer"},
        "confident": {"type": "boolean"},
    },
    "required": ["answer"],
}


def _text(text: str, structured: dict[str, Any] | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        result["structuredContent"] = structured
    return result


@server.request_handler("tools/list")
async def list_tools(ctx: RequestContext) -> dict[str, Any]:
    return {"tools": TOOLS}


@server.request_handler("tools/call")
async def call_tool(ctx: RequestContext) -> dict[str, Any]:
    name = ctx.params.get("name")
    args = ctx.params.get("arguments") or {}
    if name == "echo":
        text = str(args["text"])
        return _text(text, {"echo": text, "length": len(text)})
    if name == "countdown":
        n = int(args["n"])
        for i in range(1, n + 1):
            await ctx.report_progress(i, n, f"tick {i}")
            await anyio.lowlevel.checkpoint()
        return _text(f"liftoff after {n}")
    if name == "chatty":
        message = str(args["message"])
        await ctx.log("info", f"about to echo {message}", "chatty")
        await ctx.log("warning", {"echoed": message}, "chatty")
        return _text(message)
    if name == "ping_client":
        answer = await ctx.send_request("ping")
        return _text(f"client answered ping with {json.dumps(answer)}")
    if name == "ask":
        answer = await ctx.send_request(
            "elicitation/create",
            {"mode": "form", "message": str(args["question"]), "requestedSchema": ANSWER_SCHEMA},
        )
        return _text(json.dumps(answer, sort_keys=True), answer)
    raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}")


def main(argv: list[str]) -> None:
    mode = argv[1] if len(argv) > 1 else "stdio"
    if mode == "stdio":
        from elicitkit.transports.stdio import serve_stdio

        anyio.run(serve_stdio, server)
    elif mode == "http":
        from elicitkit.transports.http.serve import serve_http

        port = int(argv[2])

        async def run() -> None:
            await serve_http(server, host="127.0.0.1", port=port)

        anyio.run(run)
    else:
        raise SystemExit(f"usage: {argv[0]} stdio | http PORT")


if __name__ == "__main__":
    main(sys.argv)
