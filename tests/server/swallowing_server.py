"""Tools that wrap every way of asking in ``try/except Exception``: the answer must not change
with the era. Imported in-process (HTTP) and run as a script (``python swallowing_server.py``
serves stdio)."""

from __future__ import annotations

import functools
from typing import Annotated, Literal

import anyio
from pydantic import BaseModel

from elicitkit import Context, ElicitationResult, Resolve, Server
from elicitkit.elicitation.results import AcceptedElicitation


class Name(BaseModel):
    name: str


class Size(BaseModel):
    size: Literal["S", "M", "L"]


def _greeting(answer: ElicitationResult[Name]) -> str:
    return f"hello {answer.data.name}" if isinstance(answer, AcceptedElicitation) else f"no name ({answer.action})"


async def careful_size(ctx: Context) -> str:
    """A resolver that asks by itself and guards the question like any other call."""
    try:
        answer = await ctx.elicit("Which size?", Size, key="size")
    except Exception as exc:
        return f"swallowed {type(exc).__name__}"
    return answer.data.size if isinstance(answer, AcceptedElicitation) else answer.action


def build_server() -> Server:
    server = Server("swallowing")

    @server.tool()
    async def guarded_elicit(ctx: Context) -> str:
        try:
            answer = await ctx.elicit("Your name?", Name, key="name")
        except Exception as exc:
            return f"swallowed {type(exc).__name__}"
        return _greeting(answer)

    @server.tool()
    async def guarded_resolver(size: Annotated[str, Resolve(careful_size)]) -> str:
        return f"size {size}"

    @server.tool()
    async def guarded_sample(ctx: Context) -> str:
        try:
            answer = await ctx.sample("2+2?", key="model")
        except Exception as exc:
            return f"swallowed {type(exc).__name__}"
        return f"model says {answer['content']['text']}"

    @server.tool()
    async def guarded_roots(ctx: Context) -> str:
        try:
            roots = await ctx.list_roots(key="roots")
        except Exception as exc:
            return f"swallowed {type(exc).__name__}"
        return "roots " + ",".join(root["uri"] for root in roots)

    @server.tool(timeout=30)
    async def guarded_with_timeout(ctx: Context) -> str:
        """The tool's own time limit wraps the question: the signal passes through it."""
        try:
            answer = await ctx.elicit("Your name?", Name, key="name")
        except Exception as exc:
            return f"swallowed {type(exc).__name__}"
        return _greeting(answer)

    @server.tool()
    async def guarded_in_task_group(ctx: Context) -> str:
        """Two questions asked side by side from a task group, the whole group guarded."""
        found: dict[str, str] = {}

        async def ask(key: str, model: type[BaseModel]) -> None:
            answer = await ctx.elicit(f"{key}?", model, key=key)
            found[key] = str(answer.data) if isinstance(answer, AcceptedElicitation) else answer.action

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask, "name", Name)
                tg.start_soon(ask, "size", Size)
        except Exception as exc:
            return f"swallowed {type(exc).__name__}"
        return f"{found['name']} / {found['size']}"

    @server.tool(thread=True)
    def guarded_in_thread(ctx: Context) -> str:
        """A sync tool in a worker thread asks through the event loop."""
        try:
            answer = anyio.from_thread.run(functools.partial(ctx.elicit, "Your name?", Name, key="name"))
        except Exception as exc:
            return f"swallowed {type(exc).__name__}"
        return _greeting(answer)

    return server


if __name__ == "__main__":
    build_server().run()
