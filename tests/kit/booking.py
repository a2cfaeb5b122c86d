"""The booking tool the HTTP tests park and answer: one ``ctx.elicit`` form question per call.

Shared so that a test about answer order and a test about what a parked question holds ask the
very same question (two fields, a typed answer, a result that names it).
"""

from __future__ import annotations

from pydantic import BaseModel

from elicitkit import AcceptedElicitation, Context, Server


class Booking(BaseModel):
    name: str
    party_size: int


def booking_server(name: str) -> Server:
    """A server whose tool ``book(date)`` asks for a :class:`Booking` and answers from it."""
    server = Server(name)

    @server.tool()
    async def book(date: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"Book a table on {date}?", Booking)
        if isinstance(answer, AcceptedElicitation):
            return f"booked {answer.data.party_size} for {answer.data.name} on {date}"
        return "no booking"

    return server
