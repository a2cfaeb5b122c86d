"""A stdio server for the Ctrl-C and kill -9 tests: it says who it is and how it ended.

``python asking_child.py STATE_DIR`` serves over stdio. At start it writes its PID to
``STATE_DIR/pid``; its tool ``ask`` asks a yes/no and returns ``answer: <action>`` (so a test
sees whether the person's cancel reached the tool), ``wait`` notes ``tool: waiting`` and never
returns; when it leaves it appends ``exit: clean`` (served to the end) or ``exit:
KeyboardInterrupt`` to ``STATE_DIR/log``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

from elicitkit import Context, Server

server = Server("asking-child")
STATE = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")


def note(line: str) -> None:
    with (STATE / "log").open("a") as log:
        log.write(line + "\n")


@server.tool()
async def ask(ctx: Context) -> str:
    answer = await ctx.elicit("Shall we go on?", bool)
    note(f"tool: {answer.action}")
    return f"answer: {answer.action}"


@server.tool()
async def wait() -> str:
    note("tool: waiting")
    await anyio.sleep_forever()
    return "never"


if __name__ == "__main__":
    (STATE / "pid").write_text(str(os.getpid()))
    try:
        server.run()
    except KeyboardInterrupt:
        note("exit: KeyboardInterrupt")
        raise
    note("exit: clean")
