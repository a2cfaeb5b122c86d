"""The server the kit's own tests ask questions of (module level, so child processes can import it)."""

from __future__ import annotations

import anyio
from pydantic import BaseModel, Field

from elicitkit import AcceptedElicitation, Context, ElicitationTimeout, InvalidAnswer, Server

server = Server("booking", "1.0.0")

CANCELLED: list[str] = []  # tools that saw their question cancelled (the connection dropped)


class Evening(BaseModel):
    date: str = Field(description="Which evening (YYYY-MM-DD)")
    guests: int = Field(default=2, ge=1, le=12, description="How many people")


@server.tool()
async def book(ctx: Context) -> str:
    """Asks twice: which evening, then are you sure; handles a decline at each step."""
    evening = await ctx.elicit("Which evening?", Evening)
    if not isinstance(evening, AcceptedElicitation):
        return f"No booking ({evening.action} at step 1)."
    sure = await ctx.elicit(f"Book {evening.data.guests} for {evening.data.date}?", bool)
    if not (isinstance(sure, AcceptedElicitation) and sure.data):
        return f"No booking ({sure.action} at step 2)."
    return f"Booked {evening.data.guests} for {evening.data.date}."


@server.tool()
async def pay(booking: str, ctx: Context) -> str:
    """Sends the person to a payment page (URL mode)."""
    answer = await ctx.elicit_url("Pay the deposit.", f"https://pay.example.com/deposit/{booking}")
    return f"deposit {booking}: {answer.action}"


@server.tool()
async def strict(ctx: Context) -> str:
    """A form whose answer is checked by the server (a schema-violating answer is refused)."""
    try:
        answer = await ctx.elicit("How many guests?", Evening)
    except InvalidAnswer as exc:
        return f"refused: {exc.reason}"
    return f"got {answer.action}"


@server.tool()
async def hurry(ctx: Context) -> str:
    """Gives the person half a second."""
    try:
        answer = await ctx.elicit("Quick: yes or no?", bool, timeout=0.5)
    except ElicitationTimeout:
        return "too slow"
    return f"in time: {answer.action}"


@server.tool()
async def watch(ctx: Context) -> str:
    """Notes when its question is cancelled under it (the client went away)."""
    try:
        answer = await ctx.elicit("Still there?", bool)
    except anyio.get_cancelled_exc_class():
        CANCELLED.append("watch")
        raise
    return f"answered {answer.action}"


@server.tool()
async def note(text: str) -> str:
    """Prints its text (what a child process's log shows: ``process_logs()``)."""
    print(f"note: {text}")
    return "noted"
