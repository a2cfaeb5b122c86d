"""End to end over HTTP: a task waiting for input outlives a SIGKILLed server, and the code
after its last question runs exactly once however often and from wherever it is answered."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from elicitkit.protocol.tasks import EXTENSION_ID
from elicitkit.server.tasks.serving import ENV_TASK_DB
from kit.raw import ACCEPT, META_CAPS, META_INFO, META_VERSION, V2026, reply_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
SCRIPT = Path(__file__).with_name("_task_server.py")
ENVELOPE = {
    META_VERSION: V2026,
    META_CAPS: {"elicitation": {"form": {}}, "extensions": {EXTENSION_ID: {}}},
    META_INFO: {"name": "restart-test", "version": "0"},
}
APPROVE = {"action": "accept", "content": {"approve": True}}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class TaskServer:
    """The task server as a child process on one SQLite file; started, killed, started again."""

    def __init__(self, db: Path, log: Path) -> None:
        self.db = db
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def _spawn(self, port: int) -> subprocess.Popen[bytes]:
        env = {**os.environ, ENV_TASK_DB: str(self.db)}
        with self.log.open("ab") as out:
            return subprocess.Popen(
                [sys.executable, str(SCRIPT), str(port)], stdout=out, stderr=subprocess.STDOUT, env=env
            )

    async def start(self) -> None:
        port = _free_port()
        self.proc = self._spawn(port)
        self.url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(300):
            assert self.proc.poll() is None, self.log.read_text()
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                return
            except OSError:
                await asyncio.sleep(0.1)
        raise AssertionError(f"the task server did not start:\n{self.log.read_text()}")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        assert self.proc.returncode == -signal.SIGKILL

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture
def task_server(tmp_path: Path) -> Iterator[TaskServer]:
    server = TaskServer(tmp_path / "tasks.db", tmp_path / "server.log")
    try:
        yield server
    finally:
        server.stop()


async def rpc(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One 2026 request from a brand-new client (a fresh HTTP connection each time)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": ENVELOPE}}
    headers = {
        "Accept": ACCEPT,
        "Content-Type": "application/json",
        "MCP-Protocol-Version": V2026,
        "Mcp-Method": method,
    }
    name = params.get("name") if method == "tools/call" else params.get("taskId")
    if isinstance(name, str):
        headers["Mcp-Name"] = name
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.post(url, content=orjson.dumps(body), headers=headers)
    reply = reply_of(response, 1)
    assert "result" in reply.body, reply.body
    return reply.result


async def wait_for(url: str, task_id: str, statuses: set[str]) -> dict[str, Any]:
    for _ in range(200):
        task = await rpc(url, "tasks/get", {"taskId": task_id})
        if task["status"] in statuses:
            return task
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} never reached {statuses}")


async def start_waiting_task(server: TaskServer, effects: Path) -> str:
    created = await rpc(
        server.url, "tools/call", {"name": "deploy", "arguments": {"target": "prod", "effects": str(effects)}}
    )
    assert created["resultType"] == "task"
    waiting = await wait_for(server.url, created["taskId"], {"input_required"})
    assert list(waiting["inputRequests"]) == ["approve"]
    return str(created["taskId"])


async def test_a_waiting_task_survives_sigkill_and_is_answered_from_a_new_client(
    task_server: TaskServer, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    await task_server.start()
    task_id = await start_waiting_task(task_server, effects)
    task_server.kill()

    await task_server.start()  # a new process on the same SQLite file, on another port
    shown = await rpc(task_server.url, "tasks/get", {"taskId": task_id})
    assert shown["status"] == "input_required"
    assert shown["inputRequests"]["approve"]["params"]["message"] == "Deploy to prod?"
    ack = await rpc(task_server.url, "tasks/update", {"taskId": task_id, "inputResponses": {"approve": APPROVE}})
    assert ack["resultType"] == "complete" and "taskId" not in ack
    done = await wait_for(task_server.url, task_id, {"completed", "failed", "cancelled"})
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "prod: deployed"
    assert effects.read_text().splitlines() == ["deployed prod=True"]


async def test_the_code_after_the_last_question_runs_exactly_once(task_server: TaskServer, tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    await task_server.start()
    task_id = await start_waiting_task(task_server, effects)
    task_server.kill()
    await task_server.start()

    update = {"taskId": task_id, "inputResponses": {"approve": APPROVE}}
    acks = await asyncio.gather(*(rpc(task_server.url, "tasks/update", update) for _ in range(5)))
    assert all(ack["resultType"] == "complete" for ack in acks)
    done = await wait_for(task_server.url, task_id, {"completed", "failed", "cancelled"})
    assert done["status"] == "completed"
    await rpc(task_server.url, "tasks/update", update)  # late duplicates are ignored too

    task_server.kill()  # and a restart does not run the finished task again
    await task_server.start()
    again = await rpc(task_server.url, "tasks/get", {"taskId": task_id})
    assert again["status"] == "completed"
    await asyncio.sleep(0.3)
    assert effects.read_text().splitlines() == ["deployed prod=True"]
