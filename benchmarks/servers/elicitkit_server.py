"""The benchmark server written with elicitkit, one per scenario.

* ``echo`` (S0): a ``LowLevelServer`` with raw dict handlers (the thinnest path).
* ``form`` (S1): the decorator ``Server``; tool ``book(date, ctx)`` asks one 3-field form
  question with ``ctx.elicit(message, Booking)`` and answers from the typed result.
* ``resolver`` (S2): the decorator ``Server``; tool ``book(date, booking)`` where ``booking`` is
  ``Annotated[Booking, Resolve(ask_booking)]`` and ``ask_booking`` returns ``Elicit(...)``. On a
  2026-07-28 connection the question travels inside an ``InputRequiredResult`` and the answer
  comes back with the retry; on a handshake connection it is an ``elicitation/create``.

``build_server(scenario)`` is imported by ``benchmarks/run.py`` for the in-memory transport;
run as a script it serves the same server over stdio or Streamable HTTP (see ``_common.py``).
HTTP uses ``serve_http_background`` (uvicorn, log level warning, no access log, JSON answers
for plain results, an SSE stream as soon as a call asks something first).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
import otel_mode  # benchmarks/servers/otel_mode.py: ELICITKIT_BENCH_OTEL, before elicitkit loads
from pydantic import BaseModel, Field

if __name__ == "__main__":
    otel_mode.apply()

from elicitkit import AcceptedElicitation, Context, Elicit, MCPError, Resolve, Server
from elicitkit.compat import LowLevelServer, RequestContext
from elicitkit.protocol.errors import INVALID_PARAMS

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common

ToolFn = Callable[[RequestContext, dict[str, Any]], Awaitable[dict[str, Any]]]

# ----------------------------------------------------------------------------- S0: echo

ECHO_TOOL = {
    "name": "echo",
    "description": "Return the text argument unchanged.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


async def echo(ctx: RequestContext, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": arguments["text"]}]}


def echo_server() -> LowLevelServer:
    tools: dict[str, tuple[dict[str, Any], ToolFn]] = {"echo": (ECHO_TOOL, echo)}
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


# ----------------------------------------------------------------------------- S1 and S2: one form question


class Booking(BaseModel):
    """The 3-field form of S1 and S2 (the same model in servers/official_server.py)."""

    name: str = Field(description="Name for the booking")
    party_size: int = Field(description="How many people")
    confirm: bool = Field(description="Confirm the booking?")


def question(date: str) -> str:
    return f"Book a table on {date}?"


def booked(date: str, booking: Booking) -> str:
    if not booking.confirm:
        return f"not booked on {date}"
    return f"booked {booking.party_size} for {booking.name} on {date}"


def form_server() -> Server:
    server = Server("bench-elicitkit", "1.0.0")

    @server.tool(description="Book a table: asks for the name, the party size and a confirmation.")
    async def book(date: str, ctx: Context) -> str:
        answer = await ctx.elicit(question(date), Booking)
        if isinstance(answer, AcceptedElicitation):
            return booked(date, answer.data)
        return f"no booking: {answer.action}"

    return server


def ask_booking(date: str) -> Elicit[Booking]:
    return Elicit(question(date), Booking)


def resolver_server() -> Server:
    server = Server("bench-elicitkit", "1.0.0")

    @server.tool(description="Book a table: a resolver asks for the name, the party size and a confirmation.")
    async def book(date: str, booking: Annotated[Booking, Resolve(ask_booking)]) -> str:
        return booked(date, booking)

    return server


SCENARIOS: dict[str, Callable[[], LowLevelServer]] = {
    "echo": echo_server,
    "form": form_server,
    "resolver": resolver_server,
}


def build_server(scenario: str = "echo") -> LowLevelServer:
    return SCENARIOS[scenario]()


# ----------------------------------------------------------------------------- entry point


async def serve_http(server: LowLevelServer, host: str, port: int) -> None:
    from elicitkit.transports.http.serve import serve_http_background

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
