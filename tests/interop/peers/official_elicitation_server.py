"""``official_server.py`` plus tools that ask our Client questions, all written with the official SDK.

Usage::

    python official_elicitation_server.py stdio
    python official_elicitation_server.py http PORT   # Streamable HTTP at http://127.0.0.1:PORT/mcp

It imports the server of ``official_server.py`` (so every tool there is here too, unchanged)
and adds:

* ``seating``: a raw form whose optional fields have defaults; it answers with the content
  exactly as it arrived, so a test can see the client filled the defaults in.
* ``connect_account``: a URL elicitation; on accept it sends the completion notification.
* ``gated_report`` / ``grant``: ``-32042`` until ``grant`` ran for this session, which also
  sends the completion notification (on the session's standalone stream).

Nothing here imports elicitkit.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from mcp import UrlElicitationRequiredError
from mcp import types as mcp_types
from mcp.server.mcpserver import Context
from official_server import main, server

SEATING: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Name for the booking"},
        "party_size": {"type": "integer", "minimum": 1, "default": 2},
        "terrace": {"type": "boolean", "default": False},
        "area": {"type": "string", "enum": ["window", "bar", "garden"], "default": "window"},
    },
    "required": ["name"],
}

_granted: set[str] = set()  # the connections that went through ``grant``


def _connection(ctx: Context) -> str:
    """Which client connection this is: ``ctx.session`` is a fresh object per request in this SDK."""
    return (ctx.headers or {}).get("mcp-session-id", "stdio")  # stdio: one process, one connection


@server.tool(description="Ask how to seat a party; answers with the raw content that came back.")
async def seating(ctx: Context) -> str:
    result = await ctx.session.elicit_form("How should we seat you?", SEATING, related_request_id=ctx.request_id)
    return json.dumps({"action": result.action, "content": result.content}, sort_keys=True)


@server.tool(description="Send the user to a sign-in page, then report it done.")
async def connect_account(account: str, ctx: Context) -> str:
    elicitation_id = f"connect-{account}"
    result = await ctx.elicit_url(f"Sign in to {account}.", f"https://auth.example.com/{account}", elicitation_id)
    if result.action == "accept":
        await ctx.session.send_elicit_complete(elicitation_id, related_request_id=ctx.request_id)
    return f"{account}: {result.action}"


@server.tool(description="A report behind a third-party authorization (-32042 until granted).")
async def gated_report(ctx: Context) -> str:
    if _connection(ctx) not in _granted:
        raise UrlElicitationRequiredError(
            [
                mcp_types.ElicitRequestURLParams(
                    mode="url",
                    message="Authorize the reporting service.",
                    url="https://reports.example.com/authorize",
                    elicitation_id="reports-auth",
                )
            ],
            "Authorization required.",
        )
    return "report: all green"


@server.tool(description="The authorization callback, simulated: grants this session and says so.")
async def grant(ctx: Context) -> str:
    _granted.add(_connection(ctx))
    await ctx.session.send_elicit_complete("reports-auth")
    return "granted"


if __name__ == "__main__":
    main(sys.argv)
