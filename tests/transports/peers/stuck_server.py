"""A server whose tools never finish on their own, for the shutdown tests.

Usage::

    python stuck_server.py http PORT [OPTIONS_JSON]   # Streamable HTTP at http://127.0.0.1:PORT/mcp
    python stuck_server.py stdio [OPTIONS_JSON]

``OPTIONS_JSON`` is passed to ``server.run`` as keyword arguments (``{"shutdown_grace": 0.5}``).
Each tool prints ``started:<tool>`` to stderr once it is running, so a test knows when to signal.

Tools: ``forever`` (awaits forever), ``ask`` (asks a yes/no and waits for the person),
``stubborn`` (swallows every cancellation and keeps waiting), ``spin`` (asks again and again,
swallowing every failure, without ever giving the event loop a rest when asking fails fast).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys

import anyio

from elicitkit import Context, Server

server = Server("stuck")


def _started(name: str) -> None:
    print(f"started:{name}", file=sys.stderr, flush=True)


@server.tool()
async def forever() -> str:
    _started("forever")
    await anyio.sleep_forever()
    return "never"


@server.tool()
async def ask(ctx: Context) -> str:
    _started("ask")
    answer = await ctx.elicit("Shall we go on?", bool)
    return str(answer)


@server.tool()
async def stubborn() -> str:
    _started("stubborn")
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue  # a badly written tool: cancellation does not stop it


@server.tool()
async def spin(ctx: Context) -> str:
    _started("spin")
    while True:
        with contextlib.suppress(BaseException):  # a badly written tool swallows everything
            await ctx.elicit("Again?", bool)


if __name__ == "__main__":
    transport = sys.argv[1]
    if transport == "http":
        options = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
        server.run("http", port=int(sys.argv[2]), **options)
    else:
        options = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
        server.run("stdio", **options)
