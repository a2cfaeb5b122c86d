"""One instance of the stateless fleet (tests/fleet/test_stateless_fleet.py), run as a child process.

``python _stateless_server.py PORT REDIS_URL PREFIX DIRECTORY``: serves Streamable HTTP on
127.0.0.1:PORT. 2026 rounds are sealed with ``$ELICITKIT_STATE_KEYS`` (every instance has the
same) and single-use through :class:`RedisSpentStates`; tasks live in a :class:`RedisTaskStore`.
Short leases and sweeps, so a dead instance's task is taken over within about a second.
Tools say which process ran them (``pid``) in their results or in lines appended to files in
DIRECTORY (shared by the instances), so the test can see where each step ran. Questions never
name the process: a question must be the same on every instance (the replay contract).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import anyio
import redis.asyncio as aioredis
from pydantic import BaseModel

from elicitkit import Context, Server
from elicitkit.elicitation.results import AcceptedElicitation
from elicitkit.server.rounds import AeadStateCodec
from elicitkit.server.rounds.keys import load_keyring
from elicitkit.server.rounds.redis_spent import RedisSpentStates
from elicitkit.server.tasks.redis_store import RedisTaskStore

PID = os.getpid()


class Pick(BaseModel):
    value: str


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(line + "\n")


def _value(outcome: object) -> str:
    return outcome.data.value if isinstance(outcome, AcceptedElicitation) else "declined"


def build_server(redis_url: str, prefix: str, directory: Path) -> Server:
    client = aioredis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=5)
    codec = AeadStateCodec(load_keyring(), spent=RedisSpentStates(client, prefix=prefix))
    server = Server("stateless-fleet", state_codec=codec, task_store=RedisTaskStore(client, prefix=prefix))
    server.tasks.lease = 1.0
    server.tasks.sweep_interval = 0.25

    @server.tool()
    def whoami() -> str:
        return str(PID)

    @server.tool()
    async def book(n: int, ctx: Context) -> str:
        """Two questions, so three rounds: each retry may land on another instance."""
        _append(directory / "book-runs", f"{n} {PID}")  # one line per round, to see where each ran
        first = await ctx.elicit(f"n={n} first", Pick, key="first")
        second = await ctx.elicit(f"n={n} second", Pick, key="second")
        return f"n={n} first={_value(first)} second={_value(second)} by={PID}"

    @server.tool()
    async def careless(ctx: Context) -> str:
        """Breaks the replay contract on purpose: its question names the process asking it."""
        await ctx.elicit(f"asked by process {PID}", Pick)
        answer = await ctx.elicit("and then", Pick)
        return _value(answer)

    @server.tool()
    async def pay(order: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"Pay for {order}?", Pick)
        _append(directory / "payments", f"{order} {_value(answer)} {PID}")  # after the last question
        return f"paid {order} on {PID}"

    @server.tool(task="optional", task_poll_interval_ms=50)
    async def approve(item: str, ctx: Context) -> str:
        _append(directory / "approval-runs", f"{item} {PID}")  # one line per run of the body
        answer = await ctx.elicit(f"Approve {item}?", Pick)
        _append(directory / "approvals", f"{item} {_value(answer)} {PID}")  # after the last question
        return f"{item}: {_value(answer)} (finished by {PID})"

    @server.tool(task="optional", task_poll_interval_ms=50, task_rerun_on_restart=True)
    async def long_job(name: str) -> str:
        """Idempotent work that hangs on the first instance to run it (until the test kills it)."""
        marker = directory / f"{name}.started"
        if not marker.exists():
            marker.write_text(str(PID))
            await asyncio.sleep(120)
        return f"{name} finished by {PID}"

    return server


if __name__ == "__main__":
    port, redis_url, prefix, directory = int(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
    server = build_server(redis_url, prefix, directory)
    anyio.run(lambda: server.run_async("http", host="127.0.0.1", port=port))
