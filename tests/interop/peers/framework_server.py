"""A server written with elicitkit's decorator framework (``Server``): the official SDK's client talks to it.

Usage::

    python framework_server.py stdio
    python framework_server.py http PORT   # Streamable HTTP at http://127.0.0.1:PORT/mcp

Tools: ``greet`` (text), ``add`` (int, wrapped as ``{"result": ...}``), ``describe_person``
(a pydantic model with a nested one), ``picture`` (an image), ``explode`` (raises),
``refuse`` (``ToolError``), ``chatty`` (logs), ``countdown`` (progress), ``touch`` (tells
subscribers of a URI that it changed). Resources: ``config://app``, ``notes://readme``,
template ``users://{user_id}/profile``. Prompts: ``review``, ``conversation``. A completion
for ``review``'s ``language``.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

from pydantic import BaseModel, Field

from elicitkit import Context, Server, ToolError
from elicitkit.content import AssistantMessage, Image, UserMessage

PNG = b"\x89PNG\r\n\x1a\nframework"

server = Server("framework-peer", "3.2.1", instructions="written with elicitkit's decorators")


class Address(BaseModel):
    city: str
    country: str = "NL"


class Person(BaseModel):
    name: str
    age: int
    address: Address


@server.tool()
def greet(name: Annotated[str, Field(description="Who to greet")]) -> str:
    """Greet someone by name."""
    return f"Hello, {name}!"


@server.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int = 1) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@server.tool()
def describe_person(name: str, age: int, city: str) -> Person:
    """Build a person record."""
    return Person(name=name, age=age, address=Address(city=city))


@server.tool()
def picture() -> Image:
    return Image(data=PNG, mime_type="image/png")


@server.tool()
def explode() -> str:
    raise RuntimeError("the reactor melted")


@server.tool()
def refuse() -> str:
    raise ToolError("not today")


@server.tool()
async def chatty(message: str, ctx: Context) -> str:
    await ctx.debug(f"debug: {message}")
    await ctx.warning(f"warning: {message}", logger="chatty")
    return message


@server.tool()
async def countdown(n: int, ctx: Context) -> str:
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"tick {i}")
    return f"liftoff after {n}"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Tell every session subscribed to ``uri`` that it changed."""
    await ctx.server.notify_resource_updated(uri)
    return f"touched {uri}"


@server.resource("config://app", mime_type="application/json")
def app_config() -> dict[str, Any]:
    """Application settings."""
    return {"theme": "dark", "retries": 3}


@server.resource("notes://readme")
def readme() -> str:
    return "read me first"


@server.resource("users://{user_id}/profile")
def profile(user_id: int) -> dict[str, Any]:
    """A user's profile."""
    return {"id": user_id, "double": user_id * 2}


@server.prompt(title="Code review")
def review(code: str, language: str = "python") -> str:
    """Review some code.

    Args:
        code: The code to review.
        language: Its language.
    """
    return f"Review this {language} code:\n{code}"


@server.prompt()
def conversation(topic: str) -> list[Any]:
    return [UserMessage(f"Tell me about {topic}."), AssistantMessage(f"What about {topic}?")]


@server.completion()
def complete(ref: dict[str, Any], argument: str, value: str, context: dict[str, Any]) -> list[str]:
    if ref.get("name") == "review" and argument == "language":
        return [lang for lang in ("python", "perl", "rust") if lang.startswith(value)]
    return []


def main(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[1] == "http":
        server.run("http", port=int(argv[2]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv)
