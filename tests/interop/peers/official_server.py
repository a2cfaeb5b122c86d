"""A server written with the official ``mcp`` SDK's ``MCPServer``: the peer our Client must talk to.

Usage::

    python official_server.py stdio
    python official_server.py http PORT      # Streamable HTTP at http://127.0.0.1:PORT/mcp

Nothing here imports elicitkit: this process stands in for "a server somebody else wrote".
"""

from __future__ import annotations

import sys
import warnings

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

# The SDK marks logging as deprecated for the 2026 era; the handshake era still has it.
warnings.simplefilter("ignore")

server = MCPServer(
    name="official-peer", version="9.9.9", instructions="written with the official SDK", log_level="WARNING"
)


class Sum(BaseModel):
    total: int
    expression: str


class Contact(BaseModel):
    name: str = Field(description="Who to greet")
    age: int = Field(description="Their age")


@server.tool(description="Greet someone by name.")
def greet(name: str) -> str:
    return f"Hello, {name}!"


@server.tool(description="Add two integers; answers with structured output.")
def add(a: int, b: int) -> Sum:
    return Sum(total=a + b, expression=f"{a} + {b}")


@server.tool(description="Count to n, reporting progress at every step.")
async def count(n: int, ctx: Context) -> str:
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return f"counted to {n}"


@server.tool(description="Echo a message after logging it.")
async def chatty(message: str, ctx: Context) -> str:
    await ctx.info(f"about to echo {message}", logger_name="chatty")
    await ctx.warning({"echoed": message}, logger_name="chatty")
    return message


@server.tool(description="Ask the client for a contact, then greet them.")
async def ask_contact(ctx: Context) -> str:
    result = await ctx.elicit("Who should I greet?", Contact)
    if result.action == "accept":
        return f"Hello {result.data.name}, age {result.data.age}"
    return f"no contact: {result.action}"


@server.tool(description="Ping the client from inside a tool call.")
async def ping_client(ctx: Context) -> str:
    await ctx.session.send_ping()
    return "client answered ping"


def main(argv: list[str]) -> None:
    mode = argv[1] if len(argv) > 1 else "stdio"
    if mode == "stdio":
        server.run("stdio")
    elif mode == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[2]))
    else:
        raise SystemExit(f"usage: {argv[0]} stdio | http PORT")


if __name__ == "__main__":
    main(sys.argv)
