"""The server every fleet test runs three of: ``python app.py PORT [--sse]``.

Its instance id comes from ``FLEET_INSTANCE`` (so a test can map a session's owner in Redis to
a process), the Redis URL from ``ELICITKIT_REDIS_URL``, the fleet key from ``ELICITKIT_FLEET_KEY``.
"""

from __future__ import annotations

import os
import sys

import anyio
from pydantic import BaseModel

from elicitkit import Context, Server
from elicitkit.backplane.redis_backplane import RedisBackplane

INSTANCE = os.environ.get("FLEET_INSTANCE", "solo")
HEARTBEAT = float(os.environ.get("FLEET_HEARTBEAT", "0.3"))

server = Server("fleet-test", "1.0.0")


class Answer(BaseModel):
    value: str


@server.tool()
async def ask(ctx: Context, tag: str) -> str:
    """One form question; returns the answer and this instance's id."""
    answer = await ctx.elicit(f"question {tag}", Answer)
    value = answer.data.value if answer.action == "accept" and answer.data is not None else answer.action
    return f"{tag}={value}@{INSTANCE}"


@server.tool()
async def pay(ctx: Context, elicitation_id: str) -> str:
    """A URL-mode question: the client goes to a payment page; completion comes later, from anywhere."""
    answer = await ctx.elicit_url("Pay the deposit", f"https://pay.example.com/{elicitation_id}", elicitation_id)
    return f"{answer.action} {ctx.session_id}"  # the session id: what a real server hands its webhook


@server.tool()
async def confirm(session_id: str, elicitation_id: str) -> str:
    """The payment provider's webhook, as a tool: tell the paying session its URL step is done."""
    sent = await server.notify_elicitation_complete(session_id, elicitation_id)
    return f"{sent}@{INSTANCE}"


@server.tool()
async def ticks(ctx: Context, n: int, gap: float = 0.3) -> str:
    """``n`` progress notifications ``gap`` seconds apart, then the result (a resumable stream)."""
    for i in range(n):
        await ctx.report_progress(i + 1, n)
        await anyio.sleep(gap)
    return f"{n} ticks@{INSTANCE}"


@server.tool()
async def whoami() -> str:
    return INSTANCE


@server.resource("memo://board", mime_type="text/plain")
def board() -> str:
    return "the board"


@server.tool()
async def announce() -> str:
    """Change the tool list and the board, from whichever instance serves this call."""
    await server.notify_tools_changed()
    await server.notify_resource_updated("memo://board")
    return INSTANCE


def main() -> None:
    if os.environ.get("FLEET_OTEL"):  # what `elicitkit serve --otel` does: the SDK from OTEL_*
        from elicitkit.telemetry import configure_sdk

        configure_sdk()
    port = int(sys.argv[1])
    json_response = "--sse" not in sys.argv
    server.use_backplane(
        RedisBackplane.from_url(os.environ["ELICITKIT_REDIS_URL"], instance_id=INSTANCE, heartbeat=HEARTBEAT)
    )
    server.run("http", port=port, json_response=json_response, shutdown_grace=0.5)


if __name__ == "__main__":
    main()
