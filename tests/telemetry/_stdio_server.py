"""The server ``elicitkit serve tests/telemetry/_stdio_server.py:server --otel`` runs in the stdio test."""

from __future__ import annotations

from pydantic import BaseModel

from elicitkit import Context, Server

server = Server("otel-stdio-test")


class Booking(BaseModel):
    name: str
    guests: int


@server.tool()
async def book(ctx: Context, date: str) -> str:
    who = await ctx.elicit(f"Book a table on {date}?", Booking)
    return f"{who.data.name} x{who.data.guests}" if who.action == "accept" and who.data is not None else who.action
