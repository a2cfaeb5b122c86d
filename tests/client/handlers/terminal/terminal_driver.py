"""A real client and server around a TerminalHandler, for the pseudo-terminal tests.

python tests/client/handlers/terminal/terminal_driver.py order        # a pizza order form
python tests/client/handlers/terminal/terminal_driver.py pay [URL]    # a URL question (default https://pay.pizzeria.example/...)
python tests/client/handlers/terminal/terminal_driver.py confirm      # one yes/no question
python tests/client/handlers/terminal/terminal_driver.py login        # a form with a secret (an API key)
python tests/client/handlers/terminal/terminal_driver.py many         # a choice of 11 options
python tests/client/handlers/terminal/terminal_driver.py authorize    # a -32042 error: a URL with the server's reason
python tests/client/handlers/terminal/terminal_driver.py seat         # one single choice whose titles hold commas
python tests/client/handlers/terminal/terminal_driver.py extras       # one multi-select whose titles hold commas
python tests/client/handlers/terminal/terminal_driver.py cores        # one number whose description repeats its title

The server runs in-process, the client reaches it in memory, and the handler talks to the
terminal this runs in. Each tool answers with what ``ctx.elicit`` gave it, typed, as JSON;
the driver prints it on one line ``RESULT: {...}`` so a test checks what the server got
(a call that ends in a -32042 error prints ``REFUSED: <its message>``).

``pay``: after the tool returns, SIGUSR1 makes the (pretend) payment provider report the
payment, which sends ``notifications/elicitation/complete``; the driver then waits for the
handler's background wait to end and prints ``DRIVER DONE``.

``TERMINAL_DRIVER_PLAIN=1`` asks the handler for plain lines even on a terminal.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any, Literal

import anyio
from pydantic import BaseModel, Field

from elicitkit import AcceptedElicitation, Client, Context, TitledEnum, UrlElicitationRequired, UrlRequest
from elicitkit.client.handlers.terminal import TerminalHandler
from elicitkit.compat import MCPServer

server = MCPServer("pizzeria", "2.1.0", title="Pizzeria Napoli")

PAY_URL = "https://pay.pizzeria.example/checkout/42?amount=18.50"


class Size(TitledEnum):
    SMALL = "s", "Small (8 inch)"
    MEDIUM = "m", "Medium (10 inch)"
    LARGE = "l", "Large (12 inch)"


class Topping(TitledEnum):
    CHEESE = "cheese", "Extra cheese"
    OLIVES = "olives", "Black olives"
    BASIL = "basil", "Fresh basil"


class Order(BaseModel):
    name: str = Field(title="Your name", min_length=2, max_length=20, description="Who the order is for")
    size: Size = Size.MEDIUM
    toppings: list[Topping] = Field(default_factory=list, max_length=2, description="Up to two")
    quantity: int = Field(default=1, ge=1, le=10)
    delivery: bool = Field(default=True, description="Deliver to your door?")


@server.tool()
async def order(ctx: Context) -> str:
    """Take a pizza order."""
    answer = await ctx.elicit("What would you like to order?", Order)
    if isinstance(answer, AcceptedElicitation):
        data = answer.data.model_dump(mode="json")
        types = {key: type(value).__name__ for key, value in data.items()}
        return json.dumps({"action": "accept", "data": data, "types": types})
    return json.dumps({"action": answer.action.value})


class Confirm(BaseModel):
    ok: bool = Field(title="Delete the old backups?")


class Login(BaseModel):
    user: str = Field(title="User")
    api_key: str = Field(title="Api key")


Slot = Literal["09:00", "10:00", "11:00", "12:00", "13:00", "14:00", "15:00", "16:00", "17:00", "18:00", "19:00"]


class Booking(BaseModel):
    slot: Slot = Field(title="Slot")


def _report(answer: Any) -> str:
    if isinstance(answer, AcceptedElicitation):
        data = answer.data.model_dump(mode="json")
        types = {key: type(value).__name__ for key, value in data.items()}
        return json.dumps({"action": "accept", "data": data, "types": types})
    return json.dumps({"action": answer.action.value})


class Seating(TitledEnum):
    WINDOW = "window", "Inside, by the window"
    TERRACE = "terrace", "On the heated terrace"
    BAR = "bar", "At the bar"


class Seat(BaseModel):
    seating: Seating = Field(title="Seating")


class Extras(BaseModel):
    places: list[Seating] = Field(default_factory=list, title="Also fine")


class Cores(BaseModel):
    cpu_cores: int = Field(title="Cpu cores", description="CPU cores", ge=1, le=64)


@server.tool()
async def seat(ctx: Context) -> str:
    """One single choice."""
    return _report(await ctx.elicit("Where would you like to sit?", Seat))


@server.tool()
async def extras(ctx: Context) -> str:
    """One multi-select."""
    return _report(await ctx.elicit("Where else would do?", Extras))


@server.tool()
async def cores(ctx: Context) -> str:
    """One whole number."""
    return _report(await ctx.elicit("How many cores?", Cores))


@server.tool()
async def confirm(ctx: Context) -> str:
    """One yes/no question."""
    return _report(await ctx.elicit("Clean up?", Confirm))


@server.tool()
async def login(ctx: Context) -> str:
    """A form with a secret."""
    return _report(await ctx.elicit("Connect your account.", Login))


@server.tool()
async def many(ctx: Context) -> str:
    """A choice with more than nine options."""
    return _report(await ctx.elicit("Pick a time.", Booking))


@server.tool()
async def pay(url: str, ctx: Context) -> str:
    """Send the person to the payment page."""
    answer = await ctx.elicit_url("Pay 18.50 EUR for your order.", url, elicitation_id="pay-42")
    return json.dumps({"action": answer.action.value})


AUTH_URL = "https://github.example/login/oauth/authorize?state=s1"
AUTH_REASON = "Your GitHub account must be linked before your private repositories can be listed."


@server.tool()
async def authorize(ctx: Context) -> str:
    """Refuse with -32042: the person must link an account first (the error says why)."""
    raise UrlElicitationRequired([UrlRequest("Link your GitHub account.", AUTH_URL, "gh-1")], AUTH_REASON)


@server.tool()
async def paid(ctx: Context) -> str:
    """The payment provider's webhook: the person paid."""
    await ctx.elicit_complete("pay-42")
    return "paid"


async def main(scenario: str, url: str) -> None:
    plain = {"1": True, "0": None}.get(os.environ.get("TERMINAL_DRIVER_PLAIN", "0"))
    async with (
        TerminalHandler(plain=plain) as handler,
        Client(server, elicitation_callback=handler, auto_url_elicitation=True) as client,
    ):
        try:
            if scenario == "pay":
                result = await client.call_tool("pay", {"url": url})
            else:
                result = await client.call_tool(scenario, {})
        except UrlElicitationRequired as refused:
            print("REFUSED:", refused.message, flush=True)
        else:
            print("RESULT:", result.text, flush=True)
            if handler.waiting:
                with anyio.open_signal_receiver(signal.SIGUSR1) as signals:

                    async def provider() -> None:
                        async for _ in signals:
                            await client.call_tool("paid", {})
                            return

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(provider)
                        print("DRIVER: waiting", flush=True)
                        await handler.wait_idle()
                        tg.cancel_scope.cancel()
    print("DRIVER DONE", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else PAY_URL)
