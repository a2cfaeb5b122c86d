"""A FastMCP server for the gateway matrix: a form question, a URL question and a -32042.
``python fastmcp_backend.py`` (stdio). Nothing here imports elicitkit."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import anyio
from fastmcp import Context, FastMCP
from mcp import UrlElicitationRequiredError
from mcp import types as mcp_types

server = FastMCP("fastmcp-backend")


@dataclass
class Booking:
    name: str
    seats: int = 2


@server.tool
async def book(ctx: Context) -> str:
    """Ask who is booking (a form)."""
    result = await ctx.elicit("Who is booking?", Booking)
    if result.action == "accept":
        return f"booked {result.data.seats} for {result.data.name}"
    return f"no booking ({result.action})"


@server.tool
async def connect(ctx: Context) -> str:
    """Send the person to a sign-in page (a URL question)."""
    result = await ctx.session.elicit_url(
        "Sign in to the example service.",
        "https://auth.example.com/sign-in",
        "sign-in-1",
        related_request_id=ctx.request_id,
    )
    return f"connect: {result.action}"


@server.tool
async def gated() -> str:
    """Always -32042 (the authorization never completes here)."""
    raise UrlElicitationRequiredError(
        [
            mcp_types.ElicitRequestURLParams(
                mode="url",
                message="Authorize the reports service.",
                url="https://reports.example.com/authorize",
                elicitation_id="reports-auth",
            )
        ],
        "Authorization required.",
    )


@server.tool
async def wait(mark: str) -> str:
    """Wait until cancelled; leave ``cancelled-MARK`` in $GATEWAY_TEST_STATE when that happens."""
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        (Path(os.environ.get("GATEWAY_TEST_STATE", ".")) / f"cancelled-{mark}").write_text("cancelled")
        raise
    return "never"


if __name__ == "__main__":
    server.run(show_banner=False)
