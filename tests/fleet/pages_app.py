"""The server the fleet page tests run three of: ``python pages_app.py PORT``.

Tools that ask on the server's own pages (a link for a client without elicitation, URL mode
for one with it); the pages' public address is the balancer's (``FLEET_PUBLIC_URL``), so every
page request goes round-robin like any other.
"""

from __future__ import annotations

import os
import sys

from pydantic import BaseModel

from elicitkit import Context, Server
from elicitkit.backplane.redis_backplane import RedisBackplane
from elicitkit.server.pages import configure_pages

INSTANCE = os.environ.get("FLEET_INSTANCE", "solo")
HEARTBEAT = float(os.environ.get("FLEET_HEARTBEAT", "0.3"))

server = Server("fleet-pages", "1.0.0")


class Booking(BaseModel):
    guests: int


class ApiKey(BaseModel):
    api_key: str


@server.tool()
async def book(ctx: Context, day: str) -> str:
    """The party size on the server's page (a client without elicitation gets the link)."""
    result = await ctx.elicit(f"How many guests on {day}?", Booking, fallback="page", timeout=30)
    return f"booked {result.data.guests} on {day}@{INSTANCE}" if result.accepted else result.action.value


@server.tool()
async def setup_key(ctx: Context) -> str:
    """An API key, always on the server's page (URL mode)."""
    result = await ctx.elicit("Your API key", ApiKey, via="web", timeout=30)
    return f"key {result.data.api_key}@{INSTANCE}" if result.accepted else result.action.value


def main() -> None:
    port = int(sys.argv[1])
    server.use_backplane(
        RedisBackplane.from_url(os.environ["ELICITKIT_REDIS_URL"], instance_id=INSTANCE, heartbeat=HEARTBEAT)
    )
    configure_pages(server, public_url=os.environ["FLEET_PUBLIC_URL"])
    server.run("http", port=port, json_response=True, shutdown_grace=0.5)


if __name__ == "__main__":
    main()
