"""A 2026 stream keeps no message it wrote, and at most ``UNREAD_LIMIT`` its client did not read
(issue 28, point 7: every notification a listen stream ever sent was kept until it closed, so 21
streams x 20,000 changes held 420,021 events). 20 listen streams whose clients read and 5 whose
clients never read, through 10,000 changes (``--slow``; 2,000 by default) of a task or of the tool
list: what the server holds is flat after the first thousand."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from typing import Any
from urllib.parse import urlsplit

import anyio
import orjson
import pytest

from elicitkit import Server
from elicitkit.server.tasks import InMemoryTaskStore, TaskRecord
from elicitkit.transports.http.serve import serve_http_background
from elicitkit.transports.http.sessions import UNREAD_LIMIT
from kit.raw import ACCEPT, headers_for
from server.test_listen import EXT, frames

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

READERS, IDLE = 20, 5


def _listen_request(url: str, tag: str, notifications: dict[str, Any]) -> bytes:
    params = {"notifications": notifications, "_meta": EXT}
    body = orjson.dumps({"jsonrpc": "2.0", "id": tag, "method": "subscriptions/listen", "params": params})
    parts = urlsplit(url)
    headers = {"Accept": ACCEPT, "Content-Type": "application/json", **headers_for("subscriptions/listen", params)}
    head = f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Length: {len(body)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return head.encode() + b"\r\n" + body


def build() -> tuple[Server, TaskRecord]:
    server = Server("backlog", task_store=InMemoryTaskStore())

    @server.tool(task="optional")
    async def job() -> str:
        return "done"

    record = TaskRecord("t-1", "job", {}, "working", created_at=time.time(), updated_at=time.time(), ttl_ms=None)
    return server, record


@pytest.mark.parametrize("kind", ["task", "list"])
@pytest.mark.parametrize("changes", [2_000, pytest.param(10_000, marks=pytest.mark.slow)])
async def test_listen_streams_hold_a_bounded_backlog_whether_or_not_their_clients_read(changes: int, kind: str) -> None:
    """``task``: one task's status message changes ``changes`` times (each a notifications/tasks
    to every stream watching it); ``list``: the tool list changes ``changes`` times."""
    server, record = build()
    await server.tasks.store.create(record)
    notifications: dict[str, Any] = {"taskIds": [record.task_id]} if kind == "task" else {"toolsListChanged": True}
    heard = [0] * READERS
    last = [""] * READERS  # the newest task status message each reader got
    async with serve_http_background(server, port=0) as served, contextlib.AsyncExitStack() as stack:

        async def read(index: int) -> None:
            async for frame in frames(served.url, notifications, EXT, 10**9):
                if frame.get("method") == "notifications/tools/list_changed":
                    heard[index] += 1
                elif frame.get("method") == "notifications/tasks":
                    heard[index] += 1
                    last[index] = frame["params"].get("statusMessage") or ""

        idle = []
        for n in range(IDLE):  # a client that sends its listen request and never reads a byte
            host, port = urlsplit(served.url).netloc.split(":")
            _reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(_listen_request(served.url, f"idle-{n}", notifications))
            await writer.drain()
            idle.append(writer)
            stack.callback(writer.close)
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        for index in range(READERS):
            tg.start_soon(read, index)
        table = served.handler.table

        def held() -> int:
            session = table._stateless
            return 0 if session is None else sum(len(s.events) for s in session.streams.values())

        async def wait_streams() -> None:
            with anyio.fail_after(20):
                while (s := table._stateless) is None or len(s.streams) < READERS + IDLE:  # noqa: ASYNC110
                    await anyio.sleep(0.02)

        await wait_streams()
        peak_after_first_thousand = 0
        held_at_thousand = None
        await anyio.sleep(0.2)  # every stream has sent its ack (and, for a task, its current state)
        for sent in range(1, changes + 1):
            if kind == "task":
                server.tasks.events.publish(
                    dataclasses.replace(record, version=sent + 1, status_message=f"step {sent}")
                )
            else:
                await server.notify_tools_changed()
            if sent % 100 == 0:
                await anyio.sleep(0.01)  # the readers get their turn
            if sent >= 1_000:
                if held_at_thousand is None:
                    held_at_thousand = held()
                peak_after_first_thousand = max(peak_after_first_thousand, held())
        with anyio.fail_after(60):  # every reading client heard every change (a task's: its last state,
            # since a slow stream gets a task's newest state, not each one it missed)
            while (min(heard) < changes) if kind == "list" else any(m != f"step {changes}" for m in last):  # noqa: ASYNC110
                await anyio.sleep(0.05)
        bound = IDLE * UNREAD_LIMIT + READERS * 200  # the idle ones are capped; readers hold what is in flight
        print(f"held at 1,000: {held_at_thousand}; peak after: {peak_after_first_thousand}; bound {bound}")
        assert peak_after_first_thousand <= bound
        assert held() <= READERS * 200  # the idle streams were ended, the readers hold almost nothing
