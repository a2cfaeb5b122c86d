"""A task server for the end-to-end restart tests, run as a child process and SIGKILLed.

``python _task_server.py PORT``: serves Streamable HTTP on 127.0.0.1:PORT with tasks in the
SQLite file ``$ELICITKIT_TASK_DB`` (``stdio`` instead of a port: serves stdio). Its ``deploy``
tool asks one question, then appends one line to the file ``effects`` (its argument): the side
effect that must run exactly once.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from pydantic import BaseModel

from elicitkit import Context, Server
from elicitkit.elicitation.results import AcceptedElicitation


class Approval(BaseModel):
    approve: bool


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(line)


def build_server() -> Server:
    server = Server("task-restart-test")  # default store: SQLite at $ELICITKIT_TASK_DB

    @server.tool(task="optional", task_poll_interval_ms=100)
    async def deploy(target: str, effects: str, ctx: Context) -> str:
        outcome = await ctx.elicit(f"Deploy to {target}?", Approval, key="approve")
        approved = isinstance(outcome, AcceptedElicitation) and outcome.data.approve
        _append(Path(effects), f"deployed {target}={approved}\n")  # after the last question
        return f"{target}: {'deployed' if approved else 'not deployed'}"

    return server


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        anyio.run(lambda: build_server().run_async("stdio"))
    else:
        port = int(sys.argv[1])
        anyio.run(lambda: build_server().run_async("http", host="127.0.0.1", port=port))
