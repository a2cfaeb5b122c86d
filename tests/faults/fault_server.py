"""The server the fault-injection tests drive, built only from the public API.

Run as a script (the tests never run it in their own event loop, so its task count and memory
are its own)::

    python tests/faults/fault_server.py stdio
    python tests/faults/fault_server.py http PORT

Every question a tool asks ends in exactly one recorded outcome, kept in memory (the
``outcomes`` tool hands them over and forgets them) and, when ``FAULTS_OUTCOMES`` names a file,
appended to it as one JSON line (a stdio server whose client died cannot be asked any more).
``FAULTS_TRACEMALLOC=1`` traces allocations so ``diag`` can report them.

Tools:

* ``ask {tag, timeout}``: one form question (an integer ``value``); the outcome is
  ``accept:<value>``, ``decline``, ``cancel``, ``timeout`` (:class:`ElicitationTimeout`),
  ``failed`` (:class:`ElicitationFailed`: the client answered with an error),
  ``cancelled`` (:class:`asyncio.CancelledError`) or ``closed`` (:class:`ConnectionClosed`).
* ``pair {greeting}``: two questions (name, then age); records ``done:<text>`` each time the body
  finishes, so a test can count how often a sealed 2026 state let it run to the end.
* ``slow {tag, seconds}``: sleeps; records ``done`` or ``cancelled``.
* ``outcomes``: every recorded outcome by tag, then forgets them (memory stays flat).
* ``diag``: asyncio tasks, live sessions, traced and resident memory, after a garbage collection.
* ``advance_clock {seconds}``: moves the clock of the ``requestState`` codec forward (TTL tests).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import time
import tracemalloc
from typing import Annotated, Any

from pydantic import BaseModel, Field

from elicitkit import (
    AcceptedElicitation,
    CancelledElicitation,
    ConnectionClosed,
    Context,
    DeclinedElicitation,
    ElicitationTimeout,
    Server,
)
from elicitkit.errors import ElicitationFailed

# The one private import: a codec with a clock the tests can move (TTL expiry in milliseconds,
# not minutes). Everything else here is elicitkit's public surface.
from elicitkit.server.rounds.keys import KeyRing
from elicitkit.server.rounds.sealing import AeadStateCodec

STATE_TTL_SECONDS = 60
# The answer of a request whose client dropped its stream is kept this long for a resuming GET
# (default 300 s); short here so the tests see the server come back to its baseline.
# Issue 12 item 6 (legacy HTTP sessions never expire): once an idle expiry exists, configure a
# short one here so test_client_dies.py::test_http_dead_clients_leave_nothing_behind can pass.
HTTP_OPTIONS: dict[str, Any] = {"retention_seconds": 1.0}


class Pick(BaseModel):
    value: int


class Name(BaseModel):
    name: Annotated[str, Field(min_length=1)]


class Age(BaseModel):
    age: Annotated[int, Field(ge=0, le=150)]


_outcomes: dict[str, list[str]] = {}
_log_path = os.environ.get("FAULTS_OUTCOMES")
_clock_offset = [0.0]


def record(tag: str, outcome: str) -> None:
    """Keep one outcome (in memory, and in the outcomes file if there is one)."""
    _outcomes.setdefault(tag, []).append(outcome)
    note(tag, outcome)


def note(tag: str, outcome: str) -> None:
    """One line in the outcomes file, if there is one."""
    if _log_path:
        with open(_log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"tag": tag, "outcome": outcome, "pid": os.getpid()}) + "\n")


def _clock() -> float:
    return time.time() + _clock_offset[0]


server = Server(
    "faults",
    "1.0.0",
    state_codec=AeadStateCodec(KeyRing.generate(), ttl_seconds=STATE_TTL_SECONDS, clock=_clock),
)


@server.tool()
async def ask(tag: str, ctx: Context, timeout: float = 60.0) -> str:
    """One question; exactly one outcome is recorded for it, whatever happens to the client."""
    try:
        result = await ctx.elicit(f"Pick a number for {tag}", Pick, timeout=timeout)
    except ElicitationTimeout:
        record(tag, "timeout")
        return "timeout"
    except ElicitationFailed:  # the client answered with a JSON-RPC error
        record(tag, "failed")
        return "failed"
    except ConnectionClosed:
        record(tag, "closed")
        raise
    except asyncio.CancelledError:
        record(tag, "cancelled")
        raise
    match result:
        case AcceptedElicitation(data=data):
            outcome = f"accept:{data.value}"
        case DeclinedElicitation():
            outcome = "decline"
        case CancelledElicitation():
            outcome = "cancel"
    record(tag, outcome)
    return outcome


@server.tool()
async def pair(greeting: str, ctx: Context) -> str:
    """Two questions in a row (2026: two rounds); each finished run is recorded."""
    name = await ctx.elicit("Your name?", Name, key="name")
    if not isinstance(name, AcceptedElicitation):
        return f"no name ({name.action})"
    age = await ctx.elicit(f"Your age, {name.data.name}?", Age, key="age")
    if not isinstance(age, AcceptedElicitation):
        return f"no age ({age.action})"
    text = f"{greeting} {name.data.name} {age.data.age}"
    record("pair", f"done:{text}")
    return text


@server.tool()
async def slow(tag: str, seconds: float = 60.0) -> str:
    """A long call with nothing to ask (2026 drops: closing the stream must cancel it)."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        record(tag, "cancelled")
        raise
    record(tag, "done")
    return "done"


@server.tool()
async def outcomes() -> dict[str, list[str]]:
    """Everything recorded so far, then forgotten."""
    taken = dict(_outcomes)
    _outcomes.clear()
    return taken


@server.tool()
async def diag() -> dict[str, Any]:
    """Tasks (this call's own included), live sessions and memory, after a collection."""
    for _ in range(3):  # let tasks cancelled a moment ago finish their unwinding
        await asyncio.sleep(0)
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else None
    rss_pages = _rss_pages()
    return {
        "tasks": len(asyncio.all_tasks()),
        "sessions": len(server.live_sessions()),
        "traced": traced,
        "rss": rss_pages * os.sysconf("SC_PAGE_SIZE"),
    }


def _rss_pages() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:  # a tiny procfs read, not real I/O
        return int(statm.read().split()[1])


@server.tool()
async def advance_clock(seconds: float) -> float:
    """Move the ``requestState`` clock forward; returns the total offset."""
    _clock_offset[0] += seconds
    return _clock_offset[0]


def main(argv: list[str]) -> None:
    if os.environ.get("FAULTS_TRACEMALLOC") == "1":
        tracemalloc.start(1)
    note("_started", str(os.getpid()))
    if argv[:1] == ["http"]:
        idle = {"session_idle_timeout": float(argv[2])} if len(argv) > 2 else {}  # seconds
        server.run("http", port=int(argv[1]), **HTTP_OPTIONS, **idle)
    else:
        server.run("stdio")
    note("_exited", str(os.getpid()))


if __name__ == "__main__":
    main(sys.argv[1:])
