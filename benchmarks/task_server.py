"""A task through the whole server: ask once, answered through ``tasks/update``, and what a
waiting task costs when it is a real tool behind ``Server`` (not a bare runner).

    .venv/bin/python benchmarks/task_server.py [--n 1000]

N ``tools/call`` requests declaring the Tasks extension (2026-07-28, in memory, one client) make
N tasks over a SQLite store; each tool body asks one question and parks its task in
``input_required``. Reported: ms per task to create and park it, RSS per waiting task (issue
13's target is under 2 KiB: no coroutine waits, only the record), then ms per task to answer it
through ``tasks/update`` and see it ``completed``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

from elicitkit import Client, Context, Server
from elicitkit.client.tasks import TaskHandle
from elicitkit.elicitation.results import AcceptedElicitation
from elicitkit.server.tasks import SQLiteTaskStore


class Approval(BaseModel):
    approve: bool


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def build(db: Path) -> Server:
    server = Server("bench-tasks", task_store=SQLiteTaskStore(db))

    @server.tool(task="optional", task_poll_interval_ms=10)
    async def deploy(service: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"Deploy {service}?", Approval, key="approve")
        return "deployed" if isinstance(answer, AcceptedElicitation) and answer.data.approve else "kept"

    return server


async def wait_all(client: Client, ids: list[str], status: str) -> None:
    pending = set(ids)
    while pending:
        for task_id in list(pending):
            if (await client.get_task(task_id))["status"] == status:
                pending.discard(task_id)
        if pending:
            await asyncio.sleep(0.01)


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        server = build(Path(folder) / "tasks.db")
        async with Client(server, mode="modern") as client:
            warm = await client.start_task("deploy", {"service": "warm-up"})
            assert isinstance(warm, TaskHandle)
            await wait_all(client, [warm.task_id], "input_required")
            gc.collect()
            before = rss()
            started = time.perf_counter()
            ids = []
            for i in range(n):
                handle = await client.start_task("deploy", {"service": f"svc-{i}"})
                assert isinstance(handle, TaskHandle)
                ids.append(handle.task_id)
            await wait_all(client, ids, "input_required")
            created = time.perf_counter() - started
            gc.collect()
            grown = rss() - before
            started = time.perf_counter()
            for task_id in ids:
                await client.answer_task(task_id, {"approve": {"action": "accept", "content": {"approve": True}}})
            await wait_all(client, ids, "completed")
            answered = time.perf_counter() - started
        await server.tasks.aclose()
        await server.tasks.store.close()
    print(f"tasks: {n}")
    print(f"create + first run + park in input_required: {created / n * 1000:.2f} ms per task")
    print(f"RSS per waiting task (SQLite store, whole server): {grown / n:.0f} B (target < 2048 B)")
    print(f"tasks/update + final run + completed: {answered / n * 1000:.2f} ms per task")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    asyncio.run(main(parser.parse_args().n))
