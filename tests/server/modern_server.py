"""The server the 2026-07-28 tests talk to: tools, a prompt and a template resource that ask.

Imported by the in-process tests (``build_server()``), and run as a script by the stdio and
multi-process tests::

    python tests/server/modern_server.py stdio
    python tests/server/modern_server.py http      # a free port; prints "URL <url>" once serving

Requests' ``requestState`` is sealed with ``ELICITKIT_STATE_KEYS`` when set (processes started
with the same keys accept each other's state), else with a fresh per-process key. Logs go to
stderr at INFO, so a test can read why a state was rejected.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated, Literal

import anyio
from pydantic import BaseModel, Field

from elicitkit import Context, Elicit, ElicitationResult, Resolve, Server
from elicitkit.elicitation.results import AcceptedElicitation
from elicitkit.server.rounds.sealing import StateCodec


class Name(BaseModel):
    name: Annotated[str, Field(min_length=1, description="Your name")]


class Age(BaseModel):
    age: Annotated[int, Field(ge=0, le=150, description="Your age")]


class Confirm(BaseModel):
    ok: bool = Field(description="Go ahead?")


class Tone(BaseModel):
    tone: Literal["formal", "casual"]


async def confirm_removal(path: str) -> Confirm | Elicit[Confirm]:
    """Resolver of ``remove``: always asks."""
    return Elicit(f"Remove {path}?", Confirm)


def build_server(state_codec: StateCodec | None = None) -> Server:
    server = Server("modern-test", "1.2.3", instructions="Asks before it acts.", state_codec=state_codec)

    @server.tool()
    async def echo(text: str = "hi") -> str:
        """Answers at once (the header checks call it)."""
        return f"echo: {text}"

    @server.tool()
    async def signup(greeting: str, ctx: Context) -> str:
        """Two questions; the second one depends on the first answer."""
        name = await ctx.elicit("What is your name?", Name, key="name")
        if not isinstance(name, AcceptedElicitation):
            return f"no name ({name.action})"
        age = await ctx.elicit(f"How old are you, {name.data.name}?", Age, key="age")
        if not isinstance(age, AcceptedElicitation):
            return f"{greeting}, {name.data.name} (age {age.action})"
        return f"{greeting}, {name.data.name} ({age.data.age})"

    @server.tool()
    async def signup_copy(greeting: str, ctx: Context) -> str:
        """Another tool with the same arguments: state of ``signup`` must not open here."""
        name = await ctx.elicit("What is your name?", Name, key="name")
        return f"copy {greeting} {name.action}"

    @server.tool()
    async def remove(path: str, confirm: Annotated[ElicitationResult[Confirm], Resolve(confirm_removal)]) -> str:
        """A resolver asks before the body runs."""
        if isinstance(confirm, AcceptedElicitation) and confirm.data.ok:
            return f"removed {path}"
        return f"kept {path} ({confirm.action})"

    @server.tool()
    async def ask_model(question: str, ctx: Context) -> str:
        """Needs the sampling capability (-32021 without it)."""
        answer = await ctx.sample(question, key="model")
        return f"model says: {answer['content']['text']}"

    @server.prompt()
    async def write_about(topic: str, ctx: Context) -> str:
        """A prompt that asks which tone to use."""
        answer = await ctx.elicit("Which tone?", Tone, key="tone")
        tone = answer.data.tone if isinstance(answer, AcceptedElicitation) else "neutral"
        return f"Write about {topic} in a {tone} tone."

    @server.resource("notes://{owner}/secret", mime_type="text/plain")
    async def secret_note(owner: str, ctx: Context) -> str:
        """A template resource that asks before it shows anything."""
        answer = await ctx.elicit(f"Show the secret note of {owner}?", Confirm, key="show")
        if isinstance(answer, AcceptedElicitation) and answer.data.ok:
            return f"{owner}'s secret: 42"
        return "hidden"

    @server.resource("notes://readme", mime_type="text/plain")
    def readme() -> str:
        return "read me"

    @server.completion()
    def complete(ref: object, argument: str, value: str, context: object) -> list[str]:
        return [t for t in ("formal", "casual") if t.startswith(value)]

    return server


async def _serve_http(server: Server) -> None:
    from elicitkit.transports.http.serve import serve_http_background

    async with serve_http_background(server, port=0) as handle:
        print(f"URL {handle.url}", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)  # until the test closes our stdin (or kills us)


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
    if sys.argv[1:2] == ["http"]:
        anyio.run(_serve_http, build_server())
    else:
        build_server().run()
