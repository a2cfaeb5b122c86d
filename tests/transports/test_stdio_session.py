"""A stdio child runs in a session of its own: Ctrl-C in the terminal is ours alone, and the
child still ends when we do (even by SIGKILL), because its stdin closes.

The Ctrl-C test runs ``elicitkit call`` in a real pseudo-terminal (pexpect): the terminal
sends SIGINT to its whole foreground process group, which before this change held the child.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pexpect
import pytest

from elicitkit import Client, ElicitationResult
from elicitkit.transports.stdio import StdioTransport

pytestmark = pytest.mark.timeout(60)

CHILD = Path(__file__).resolve().parent / "peers" / "asking_child.py"
ROOT = Path(__file__).resolve().parents[2]


def gone(pid: int) -> bool:
    """No such process, or only its zombie (a reparented child waits for an init that may not reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.05)
    return gone(pid)


def wait_for(path: Path, seconds: float = 15) -> str:
    deadline = time.monotonic() + seconds
    while not (path.is_file() and path.read_text()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return path.read_text()


@pytest.mark.skipif(os.name != "posix", reason="sessions are POSIX")
@pytest.mark.anyio
async def test_the_child_has_a_session_of_its_own(tmp_path: Path) -> None:
    async def never(request: object) -> ElicitationResult[None]:
        return ElicitationResult.cancel()

    command = [sys.executable, str(CHILD), str(tmp_path)]
    async with Client(command, elicitation_callback=never, timeout=30) as client:
        transport = client.transport
        assert isinstance(transport, StdioTransport) and transport.process is not None
        pid = transport.process.pid
        assert os.getsid(pid) == pid != os.getsid(0)  # its own session: the terminal's signals miss it
        assert (await client.call_tool("ask")).text == "answer: cancel"
    assert gone(pid)  # the client waited for it to leave
    assert (tmp_path / "log").read_text().splitlines() == ["tool: cancel", "exit: clean"]  # closed stdin: it left


@pytest.mark.skipif(os.name != "posix", reason="sessions are POSIX")
@pytest.mark.anyio
async def test_own_session_can_be_turned_off(tmp_path: Path) -> None:
    command = [sys.executable, str(CHILD), str(tmp_path)]
    async with Client(command, transport_options={"own_session": False}, timeout=30) as client:
        transport = client.transport
        assert isinstance(transport, StdioTransport) and transport.process is not None
        assert os.getsid(transport.process.pid) == os.getsid(0)


def test_a_natively_cancelled_call_ends_and_stops_the_child(tmp_path: Path) -> None:
    """``task.cancel()`` on the task that awaits a call (what asyncio does on Ctrl-C) ends the
    client at once; before, closing it looped forever (client/connect.py ``_close``)."""

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None

        async def cancel_once_running() -> None:
            while not (tmp_path / "log").is_file():  # noqa: ASYNC110 (another process writes it)
                await asyncio.sleep(0.02)
            task.cancel()

        watcher = asyncio.ensure_future(cancel_once_running())
        async with Client([sys.executable, str(CHILD), str(tmp_path)], timeout=30) as client:
            await client.call_tool("wait")
        watcher.cancel()

    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    assert time.monotonic() - started < 20
    assert (tmp_path / "log").read_text().splitlines() == ["tool: waiting", "exit: clean"]


def _spawn_call(tmp_path: Path, tool: str = "ask") -> pexpect.spawn[str]:
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONUNBUFFERED": "1"}
    env.pop("NO_COLOR", None)
    server = f"{sys.executable} {CHILD} {tmp_path}"
    child = pexpect.spawn(
        sys.executable,
        ["-m", "elicitkit.cli", "call", server, tool, "--plain"],
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        dimensions=(50, 200),
        timeout=20,
    )
    return child


@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal and process groups")
def test_ctrl_c_at_a_question_is_the_clients_and_the_child_exits_cleanly(tmp_path: Path) -> None:
    """Ctrl-C at a terminal question: the client prints its cancel path, the tool hears "cancel"
    and answers, and the child server leaves cleanly (no KeyboardInterrupt anywhere)."""
    child = _spawn_call(tmp_path)
    try:
        child.expect_exact("[y/n]")
        child.expect_exact("\u203a")
        pid = int(wait_for(tmp_path / "pid"))
        child.sendintr()  # the terminal's VINTR: SIGINT to its foreground group
        child.expect_exact("Cancelled (Ctrl-C)")
        child.expect_exact("answer: cancel")  # the tool got the cancel and answered
        child.expect(pexpect.EOF, timeout=15)
        seen = child.before
        child.close()
        assert child.exitstatus == 0, seen
    finally:
        child.close(force=True)
    assert wait_gone(pid, 10)
    log = (tmp_path / "log").read_text().splitlines()
    assert log == ["tool: cancel", "exit: clean"], log
    assert "Traceback" not in seen and "KeyboardInterrupt" not in seen


@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal and process groups")
def test_ctrl_c_while_a_tool_runs_ends_the_client_and_then_the_child(tmp_path: Path) -> None:
    """No question on screen: Ctrl-C stops the client (click says "Aborted!"), which closes the
    child's stdin; the child leaves cleanly. (The client used to spin forever here: a loop in an
    exception's context chain, see client/connect.py ``_close``.)"""
    child = _spawn_call(tmp_path, "wait")
    try:
        pid = int(wait_for(tmp_path / "pid"))
        wait_for(tmp_path / "log")  # the tool runs
        started = time.monotonic()
        child.sendintr()
        child.expect_exact("Aborted!", timeout=10)
        child.expect(pexpect.EOF, timeout=10)
        took = time.monotonic() - started
        seen = child.before
        child.close()
        assert child.exitstatus == 1, seen
    finally:
        child.close(force=True)
    assert took < 5, took
    assert wait_gone(pid, 5)
    assert (tmp_path / "log").read_text().splitlines() == ["tool: waiting", "exit: clean"]
    assert "Traceback" not in seen


@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal and SIGKILL")
def test_the_child_ends_when_the_client_is_killed(tmp_path: Path) -> None:
    """kill -9 of the client while a question waits: the child reads EOF on stdin and leaves."""
    child = _spawn_call(tmp_path)
    try:
        child.expect_exact("[y/n]")
        pid = int(wait_for(tmp_path / "pid"))
        assert not gone(pid)
        os.kill(child.pid, signal.SIGKILL)
        assert wait_gone(pid, 5), "the stdio child outlived its killed client"
    finally:
        child.close(force=True)
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)
    assert (tmp_path / "log").read_text().splitlines()[-1] == "exit: clean"
