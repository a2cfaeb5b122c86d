"""A bistro that asks instead of failing: another date for a full evening, a deposit paid in the browser.

python examples/elicitation/bistro.py          # serve over stdio
python examples/elicitation/bistro.py --demo   # an in-memory client answers the questions

``book_table`` asks with a form when the evening is full and books the date the user picks
by calling itself again, so a date that is also full is asked about in turn. ``pay_deposit``
sends the user to a payment page (URL mode); ``confirm_deposit`` stands in for the payment
provider's webhook and tells the client the out-of-band step is done.
"""

from __future__ import annotations

import sys

import anyio
from pydantic import BaseModel, Field

from elicitkit import (
    AcceptedElicitation,
    CancelledElicitation,
    Client,
    Context,
    DeclinedElicitation,
    ElicitationResult,
    FormRequest,
    Server,
    UrlRequest,
)

server = Server("bistro", "1.0.0", instructions="Books tables and takes the deposit that holds them.")

FULL = {"2025-12-24", "2025-12-25", "2025-12-26"}


class OtherDate(BaseModel):
    try_other: bool = Field(description="Look at another evening?")
    date: str = Field(default="2025-12-26", description="Which evening (YYYY-MM-DD)")


@server.tool()
async def book_table(date: str, party_size: int, ctx: Context) -> str:
    """Book a table for the evening of ``date``."""
    if date not in FULL:
        return f"Table for {party_size} booked on {date}."
    answer = await ctx.elicit(f"We are full for {party_size} on {date}. Try another evening?", OtherDate)
    match answer:
        case AcceptedElicitation(data=OtherDate(try_other=True, date=other)):
            return await book_table(other, party_size, ctx)  # the new date is checked like any other
        case DeclinedElicitation():
            return "No booking made: you declined another date."
        case CancelledElicitation():
            return "No booking made: the question was dismissed."
    return "No booking made."  # accepted, but with try_other unticked


@server.tool()
async def pay_deposit(booking_id: str, ctx: Context) -> str:
    """Take the 20 EUR deposit that holds a booking. The card details never pass through MCP."""
    answer = await ctx.elicit_url(
        "Pay the 20 EUR deposit that holds your table.",
        f"https://pay.bistro.example/deposit/{booking_id}",
        elicitation_id=f"deposit-{booking_id}",
    )
    if answer.accepted:  # they agreed to open the page, not (yet) paid
        return f"Waiting for the deposit of booking {booking_id}; the payment page is open in your browser."
    return f"No deposit for booking {booking_id} ({answer.action}); the table is held for one hour."


@server.tool()
async def confirm_deposit(booking_id: str, ctx: Context) -> str:
    """The payment provider reports a paid deposit (a webhook in real life, a tool here)."""
    await ctx.elicit_complete(f"deposit-{booking_id}")  # notifications/elicitation/complete
    return f"Booking {booking_id}: deposit paid, table confirmed."


# ----------------------------------------------------------------------------- the demo

# What the scripted "user" answers, question after question.
ANSWERS: list[ElicitationResult[object]] = [
    ElicitationResult.accept({"try_other": True}),  # the client fills in the default date: the 26th
    ElicitationResult.accept({"try_other": True, "date": "2025-12-27"}),  # the 26th is full too
    ElicitationResult.decline(),
    ElicitationResult.accept(),  # yes, open the payment page
]


async def answer(request: FormRequest | UrlRequest) -> ElicitationResult[object]:
    assert request.origin is not None
    print(f"{request.origin.display_name} asks: {request.message}")
    if isinstance(request, UrlRequest):
        print(f"  user: opens {request.url}")
    reply = ANSWERS.pop(0)
    print(f"  user: {reply.action} {reply.content or ''}".rstrip())
    return reply


async def main() -> None:
    async with Client(server, elicitation_callback=answer) as client:
        booked = await client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
        print("book_table ->", booked.text)
        refused = await client.call_tool("book_table", {"date": "2025-12-24", "party_size": 4})
        print("book_table ->", refused.text)
        pending = await client.call_tool("pay_deposit", {"booking_id": "42"})
        print("pay_deposit ->", pending.text)

        async def payment_provider() -> None:  # the provider's webhook, arriving a little later
            await anyio.sleep(0.1)
            print("confirm_deposit ->", (await client.call_tool("confirm_deposit", {"booking_id": "42"})).text)

        print("client: waiting for deposit-42 to complete ...")
        async with anyio.create_task_group() as tg:
            tg.start_soon(payment_provider)
            done = await client.wait_for_elicitation_complete("deposit-42", timeout=10)
        print("client: deposit-42 complete" if done else "client: gave up waiting for deposit-42")


if __name__ == "__main__":
    if "--demo" in sys.argv[1:]:
        anyio.run(main)
    else:
        server.run()
