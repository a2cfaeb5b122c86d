"""Resources: fixed URIs, and RFC 6570 templates whose variables become typed arguments.

python examples/resources_and_templates.py          # serve over stdio
python examples/resources_and_templates.py --demo   # connect in memory and show what a client sees
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

from elicitkit import Client, Context, MCPError, Server

server = Server("resources-demo", "1.0.0")

USERS = {1: {"name": "Ada", "role": "admin"}, 2: {"name": "Grace", "role": "engineer"}}
NOTES: dict[str, str] = {"todo": "write the docs"}


@server.resource("config://app", mime_type="application/json")
def app_config() -> dict[str, Any]:
    """The application settings."""
    return {"theme": "dark", "version": 3}


@server.resource("users://{user_id}/profile")
def user_profile(user_id: int) -> dict[str, Any]:
    """A user's profile; ``user_id`` arrives as an int."""
    if user_id not in USERS:
        raise MCPError(-32002, f"no user {user_id}", {"uri": f"users://{user_id}/profile"})
    return {"id": user_id, **USERS[user_id]}


@server.resource("notes://{title}", mime_type="text/plain")
def note(title: str) -> str:
    """A note by title (percent-encoded in the URI)."""
    return NOTES.get(title, f"(no note called {title!r})")


@server.tool()
async def write_note(title: str, text: str, ctx: Context) -> str:
    """Write a note and tell subscribers of its URI that it changed."""
    NOTES[title] = text
    await ctx.server.notify_resource_updated(f"notes://{title}")
    return f"saved {title}"


async def main() -> None:
    def on_notification(method: str, params: dict[str, Any]) -> None:
        print(f"notification {method} {params}")

    async with Client(server, notification_callback=on_notification) as client:
        print("resources:", [r.uri for r in (await client.list_resources()).resources])
        print("templates:", [t.uri_template for t in (await client.list_resource_templates()).resource_templates])
        print("config://app ->", (await client.read_resource("config://app")).contents[0].text)
        print("users://2/profile ->", (await client.read_resource("users://2/profile")).contents[0].text)
        print("notes://shopping%20list ->", (await client.read_resource("notes://shopping%20list")).contents[0].text)
        try:
            await client.read_resource("nothing://here")
        except MCPError as exc:
            print(f"nothing://here -> error {exc.code}: {exc.message}")
        await client.subscribe_resource("notes://todo")
        print((await client.call_tool("write_note", {"title": "todo", "text": "ship it"})).text)
        print("notes://todo ->", (await client.read_resource("notes://todo")).contents[0].text)


if __name__ == "__main__":
    if "--demo" in sys.argv[1:]:
        anyio.run(main)
    else:
        server.run()
