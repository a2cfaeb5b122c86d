"""An elicitkit server for the gateway tests: a form question, a URL question, a -32042, a call that
waits until cancelled, progress, sampling and roots. ``python backend.py [stdio | http PORT]``.

``GATEWAY_TEST_STATE`` names a directory shared by every process of a test module: the tickets
``gated`` has already asked about (so the call after the URL step succeeds, on whichever backend
process it lands) and the marks ``wait`` leaves when it is cancelled.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import anyio
from pydantic import BaseModel, Field

from elicitkit import AcceptedElicitation, Context, Server, UrlElicitationRequired, UrlRequest
from elicitkit.tasks import InMemoryTaskStore

server = Server("backend", task_store=InMemoryTaskStore())
STATE = Path(os.environ.get("GATEWAY_TEST_STATE", "."))


class Booking(BaseModel):
    name: str = Field(title="Your name")
    seats: int = Field(default=2, title="Seats")


@server.tool()
async def book(ctx: Context) -> str:
    """Ask who is booking (a form)."""
    answer = await ctx.elicit("Who is booking?", Booking)
    if isinstance(answer, AcceptedElicitation):
        return f"booked {answer.data.seats} for {answer.data.name}"
    return f"no booking ({answer.action.value})"


@server.tool()
async def book_counted(mark: str, ctx: Context) -> str:
    """``book``, counting its runs in ``runs-MARK`` (code before a question runs once per run)."""
    runs = STATE / f"runs-{mark}"
    runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))
    return await book(ctx)


@server.tool(task="required", task_poll_interval_ms=50)
async def report(ctx: Context) -> str:
    """Runs only as a task (2026); asks who it is for, from inside the task."""
    answer = await ctx.elicit("Who is the report for?", Booking)
    return f"report for {answer.data.name}" if isinstance(answer, AcceptedElicitation) else "no report"


@server.tool()
async def two_questions(mark: str, ctx: Context) -> str:
    """Two forms, one after the other (runs counted in ``runs-MARK``)."""
    runs = STATE / f"runs-{mark}"
    runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))
    first = await ctx.elicit("Who is booking?", Booking)
    second = await ctx.elicit("Who pays?", Booking)
    names = [a.data.name if isinstance(a, AcceptedElicitation) else a.action.value for a in (first, second)]
    return f"{names[0]}, then {names[1]}"


@server.tool()
async def connect(ctx: Context) -> str:
    """Send the person to a sign-in page (a URL question)."""
    answer = await ctx.elicit_url("Sign in to the example service.", "https://auth.example.com/sign-in", "sign-in-1")
    if answer.accepted and ctx.client_supports("elicitation"):
        with contextlib.suppress(Exception):  # 2026 has no completion notice
            await ctx.elicit_complete("sign-in-1")
    return f"connect: {answer.action.value}"


@server.tool()
async def gated(ticket: str) -> str:
    """-32042 the first time a ticket is seen; the report after that."""
    seen = STATE / f"ticket-{ticket}"
    if not seen.exists():
        seen.write_text("asked")
        raise UrlElicitationRequired(
            [UrlRequest("Authorize the reports service.", "https://reports.example.com/authorize", f"auth-{ticket}")],
            "Authorization required.",
        )
    return f"report for {ticket}"


@server.tool()
async def wait(mark: str) -> str:
    """Wait until cancelled; leave ``cancelled-MARK`` behind when that happens."""
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        (STATE / f"cancelled-{mark}").write_text("cancelled")
        raise
    return "never"


@server.tool()
async def count(ctx: Context) -> str:
    """Three progress notifications, then done."""
    for step in (1, 2, 3):
        await ctx.report_progress(step, 3, f"step {step}")
    return "counted"


@server.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Ask the host's model (sampling) and its roots."""
    sampled = await ctx.sample(f"Summarize: {text}")
    roots = await ctx.list_roots()
    said = sampled.get("content", {}).get("text") if isinstance(sampled, dict) else None
    return f"{said} | roots: {', '.join(r.get('uri', '?') for r in roots)}"


@server.tool()
async def pid() -> int:
    """This process's id (the tests kill it to see the gateway restart the backend)."""
    return os.getpid()


class Login(BaseModel):
    user: str
    password: str


@server.tool()
async def login(ctx: Context) -> str:
    """A form that fishes for a secret (the gateway's policy refuses it)."""
    answer = await ctx.elicit("Your password, please.", Login)
    return f"login: {answer.action.value}"


@server.tool()
async def chatty(ctx: Context) -> str:
    """Logs to the host while it runs."""
    await ctx.warning("careful now")
    return "said"


@server.tool()
async def grow(name: str) -> str:
    """Add a tool named ``name`` and tell every client the list changed."""

    async def added() -> str:
        return f"{name} is here"

    from elicitkit.server.tools import make_tool

    server.add_tool(make_tool(added, name=name, description="Added at run time."))
    await server.notify_tools_changed()
    return f"added {name}"


@server.tool()
async def fail() -> str:
    """A tool error."""
    raise ValueError("the backend's tool failed")


@server.resource("note://hello")
def hello() -> str:
    return "hello from the backend"


@server.resource("note://items/{item}")
def item(item: str) -> str:
    return f"item {item}"


@server.tool()
async def ask_then_work(mark: str, ctx: Context) -> str:
    """A form, then three progress steps, then wait until cancelled when the name is ``wait``
    (leaving ``cancelled-MARK``); for the gateway fleet: what happens after the question."""
    answer = await ctx.elicit("Who is booking?", Booking)
    name = answer.data.name if isinstance(answer, AcceptedElicitation) else "nobody"
    for step in (1, 2, 3):
        await ctx.report_progress(step, 3, f"step {step}")
    if mark.startswith("wait"):
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            (STATE / f"cancelled-{mark}").write_text("cancelled")
            raise
    return f"worked for {name}"


@server.prompt()
def greet(name: str) -> str:
    """A greeting."""
    return f"Hello, {name}!"


@server.completion()
def complete(ref: dict, argument: str, value: str, context: dict) -> list[str]:
    return [n for n in ("ada", "alan", "grace") if n.startswith(value)]


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("http", port=int(sys.argv[2]))
    else:
        server.run()
