"""A client that dies (SIGKILL) while a tool's question waits for its answer.

stdio: the server's stdin ends, so the tool must see cancellation and the process must exit.
HTTP (2025-11-25): a disconnect is not a cancellation (transport spec), so the question stays
pending until its own timeout; meanwhile the server keeps serving everyone else, and once the
question is withdrawn nothing of the request is left. What is left is the dead client's
session, which the idle expiry (issue 12 item 6) ends: the last test checks nothing is left.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from kit.raw import wait_until

from ._support import (
    DYING_CLIENT,
    Figures,
    HttpSession,
    assert_back_to,
    fresh_http,
    read_outcome_lines,
    server_env,
    settle,
    streamed_call,
)

pytestmark = pytest.mark.anyio

REAL_KILLS = 2  # real client processes SIGKILLed per transport (each costs a Python start-up)
CHEAP_DEATHS = 50  # dead clients emulated by dropping the connection (what the kernel does on SIGKILL)


def _gone(pid: int) -> bool:
    """No such process, or a zombie waiting for its (new) parent to reap it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


async def _start_and_kill(target: str, tag: str, timeout: float, outcomes: Path) -> None:
    """A real elicitkit Client process asks nothing back; it is SIGKILLed once its question is pending."""
    proc = await anyio.open_process(
        [sys.executable, str(DYING_CLIENT), target, tag, str(timeout)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(outcomes),
    )
    try:
        assert proc.stdout is not None
        seen = b""
        with anyio.fail_after(30):
            while f"PENDING {tag}".encode() not in seen:
                seen += await proc.stdout.receive()
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await proc.aclose()


async def test_stdio_client_killed_with_question_pending(tmp_path: Path) -> None:
    """The tool sees CancelledError exactly once and the orphaned server exits."""
    outcomes = tmp_path / "outcomes.jsonl"
    tags = [f"stdio-dead-{i}" for i in range(REAL_KILLS)]
    async with anyio.create_task_group() as tg:
        for tag in tags:
            tg.start_soon(_start_and_kill, "stdio", tag, 60.0, outcomes)

    def all_exited() -> bool:
        lines = read_outcome_lines(outcomes)
        started = [int(line["outcome"]) for line in lines if line["tag"] == "_started"]
        return len(started) == REAL_KILLS and all(_gone(pid) for pid in started)

    await wait_until(all_exited, 15, "the orphaned servers to exit")
    lines = read_outcome_lines(outcomes)
    for tag in tags:
        mine = [line for line in lines if line["tag"] == tag]
        assert [line["outcome"] for line in mine] == ["cancelled"]
        pid = mine[0]["pid"]
        assert {"tag": "_exited", "outcome": str(pid), "pid": pid} in lines  # a clean exit


async def _per_session_tasks(session: HttpSession, baseline: Figures) -> int:
    """How many tasks one idle legacy session holds (measured, not assumed)."""
    async with fresh_http() as http:
        extra = await HttpSession(http, session.url).open()
        with_one = Figures.of(await session.tool("d1", "diag"))
        assert (await extra.delete()).status_code == 200
    return with_one.tasks - baseline.tasks


async def test_http_client_killed_with_question_pending(url: str, tmp_path: Path) -> None:
    """Documented legacy behaviour: the question outlives the connection and ends by its timeout.

    Two real client processes are SIGKILLed and fifty more clients vanish the way the kernel
    makes them vanish (their connection drops mid-stream). While their questions wait, a live
    client is served; each tool then sees ElicitationTimeout exactly once, and of each request
    nothing remains: the only thing left is each dead client's session (one idle session's
    tasks each; the test below checks that idle expiry takes those too).
    """
    async with fresh_http() as http:
        live = await HttpSession(http, url).open()
        await live.tool("o0", "outcomes")
        baseline = await settle(lambda: live.tool("d0", "diag"), Figures.of(await live.tool("d0", "diag")))
        per_session = await _per_session_tasks(live, baseline)
        tags = [f"http-dead-{i}" for i in range(REAL_KILLS)]
        cheap = [f"http-gone-{i}" for i in range(CHEAP_DEATHS)]
        async with anyio.create_task_group() as tg:
            for tag in tags:
                tg.start_soon(_start_and_kill, url, tag, 1.0, tmp_path / "client.jsonl")
            for tag in cheap:
                tg.start_soon(_die_with_question_pending, http, url, tag)
        await live.ping("still-serving")  # the deaths did not disturb anyone else
        await anyio.sleep(1.5)
        seen = await live.tool("o2", "outcomes")
        # "timeout", not "cancelled": the disconnect did not cancel; the question's own deadline ended it
        assert seen == {tag: ["timeout"] for tag in tags + cheap}
        dead = REAL_KILLS + CHEAP_DEATHS
        expected = Figures(baseline.tasks + dead * per_session, baseline.sessions, baseline.traced, 0)
        after = await settle(lambda: live.tool("d2", "diag"), expected, extra_sessions=dead)
        assert after.sessions - baseline.sessions == dead  # the dead clients' sessions
        assert after.tasks == baseline.tasks + dead * per_session  # and nothing else


async def _die_with_question_pending(http: httpx.AsyncClient, url: str, tag: str) -> None:
    """Open a session, get the question, then vanish (the connection drops; no DELETE, no cancel)."""
    session = await HttpSession(http, url).open()
    async with streamed_call(session, f"call-{tag}", "ask", tag=tag, timeout=1.0) as events:
        message = await events.next_message()
        assert message["method"] == "elicitation/create"


async def test_http_dead_clients_leave_nothing_behind(short_idle_url: str) -> None:
    """After 50 clients died with a question pending (and the questions timed out), the server's
    tasks, sessions and memory are back to where they were."""
    url = short_idle_url

    async def wait(live: HttpSession, seconds: float) -> None:  # the live session is never idle for long
        for n in range(int(seconds / 0.5)):
            await anyio.sleep(0.5)
            await live.ping(f"keep-{n}")

    async with fresh_http() as http:
        live = await HttpSession(http, url).open()
        async with anyio.create_task_group() as tg:
            for warm in range(3):
                tg.start_soon(_die_with_question_pending, http, url, f"warm-{warm}")
        await wait(live, 1.5)
        await live.tool("o0", "outcomes")
        baseline = Figures.of(await live.tool("d0", "diag"))
        async with anyio.create_task_group() as tg:
            for i in range(CHEAP_DEATHS):
                tg.start_soon(_die_with_question_pending, http, url, f"gone-{i}")
        await wait(live, 1.5)
        seen = await live.tool("o1", "outcomes")
        assert seen == {f"gone-{i}": ["timeout"] for i in range(CHEAP_DEATHS)}
        after = await settle(lambda: live.tool("d1", "diag"), baseline, timeout=10)  # idle expiry is 2.5 s
        assert_back_to(after, baseline, f"{CHEAP_DEATHS} dead clients")


async def _drop_then_delete(http: httpx.AsyncClient, url: str, tag: str) -> None:
    """A call dropped mid-question (its question waits 60 s), then the session DELETEd."""
    session = await HttpSession(http, url).open()
    async with streamed_call(session, f"call-{tag}", "ask", tag=tag, timeout=60.0) as events:
        message = await events.next_message()
        assert message["method"] == "elicitation/create"
    assert (await session.delete()).status_code == 200


async def test_http_delete_ends_the_sessions_work_at_once(url: str) -> None:
    """50 calls dropped mid-question, their sessions DELETEd: within a second the server runs no
    task for any of them (issue 28, point 9: a retention task per dropped call waited for
    ``retention_seconds``, 300 s, after the session was gone)."""
    async with fresh_http() as http:
        live = await HttpSession(http, url).open()
        await live.tool("o0", "outcomes")
        baseline = await settle(lambda: live.tool("d0", "diag"), Figures.of(await live.tool("d0", "diag")))
        async with anyio.create_task_group() as tg:
            for i in range(CHEAP_DEATHS):
                tg.start_soon(_drop_then_delete, http, url, f"deleted-{i}")
        after = await settle(lambda: live.tool("d1", "diag"), baseline, timeout=1.0)
        # tasks and sessions (memory is the test above's: a first run warms caches here)
        assert after.sessions <= baseline.sessions, after
        assert after.tasks <= baseline.tasks, f"{after.tasks - baseline.tasks} tasks left 1 s after the DELETEs"
        seen = await live.tool("o1", "outcomes")
        assert seen == {f"deleted-{i}": ["cancelled"] for i in range(CHEAP_DEATHS)}  # each tool was told
