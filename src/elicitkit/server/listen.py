"""``subscriptions/listen`` (SEP-2575): the 2026-07-28 stream of list changes and task statuses.

There is no session on 2026, so a client that wants to hear about changes opens a stream: one
``subscriptions/listen`` request whose answer never comes while the stream lives. Its first
message acknowledges the kinds the server agreed to; every message carries the stream's id
(the request's JSON-RPC id) in ``_meta``; only kinds asked for are sent. The notifications go
out as notifications of that request (on HTTP, the request's SSE stream). The client ends it
by closing the stream (HTTP) or cancelling the request; the handler is then cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import anyio

from elicitkit.protocol import subscriptions as subs
from elicitkit.protocol import tasks as wire
from elicitkit.protocol.errors import MCPError
from elicitkit.protocol.jsonrpc import JSON

if TYPE_CHECKING:
    from elicitkit.server.scope import RequestScope
    from elicitkit.server.server import Server
    from elicitkit.server.tasks.events import TaskSubscription
    from elicitkit.server.tasks.store import TaskRecord

__all__ = ["Listeners", "listen"]

Event = tuple[str, dict[str, Any] | None]


class Listeners:
    """The open listen streams of one server process: a queue each; publishing never waits."""

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[Event]] = set()

    def publish(self, method: str, params: dict[str, Any] | None = None) -> None:
        for queue in self._queues:
            queue.put_nowait((method, params))

    def open(self) -> asyncio.Queue[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._queues.add(queue)
        return queue

    def close(self, queue: asyncio.Queue[Event]) -> None:
        self._queues.discard(queue)

    def __len__(self) -> int:
        return len(self._queues)


async def _owned_tasks(server: Server, scope: RequestScope, task_ids: tuple[str, ...]) -> dict[str, TaskRecord]:
    """The asked-for tasks this caller may watch, as read now (someone else's task looks like no task)."""
    if not task_ids or not server.tasks.enabled:
        return {}
    runner = await server.tasks.runner()
    owner = server.tasks.owner(scope)
    owned: dict[str, TaskRecord] = {}
    for task_id in task_ids:
        with contextlib.suppress(MCPError):
            owned[task_id] = await runner.get(task_id, owner=owner)
    return owned


async def listen(server: Server, scope: RequestScope) -> JSON:
    """Serve one listen stream until the client closes it."""
    scope.serve_2026_only(subs.LISTEN)
    wanted = subs.parse_listen(scope.params)
    wire.check_listen(wanted, scope.client_capabilities)
    # watch before reading who owns what: a change committed meanwhile is not lost
    tasks = (
        server.tasks.events.subscribe(wanted.task_ids, reading=True)
        if wanted.task_ids and server.tasks.enabled
        else None
    )
    queue: asyncio.Queue[Event] | None = None
    try:
        owned = await _owned_tasks(server, scope, wanted.task_ids)
        accepted = wanted.restrict(
            tools=True,
            prompts=True,
            resources=True,
            resource_ok=lambda uri: True,
            task_ok=owned.__contains__,
        )
        if tasks is not None:
            tasks.narrow(accepted.task_ids, current=owned)
        stream_id = scope.public_request_id  # the subscription's id on the wire
        notify = scope.request.notify
        queue = server.listeners.open()
        ack = subs.acknowledgement(stream_id, accepted)
        await notify(ack["method"], ack["params"])
        async with anyio.create_task_group() as group:
            if tasks is not None and tasks.task_ids:
                group.start_soon(_forward_tasks, tasks, stream_id, notify)
            while True:
                method, params = await queue.get()
                if accepted.wants(method, params):
                    message = subs.tagged(method, params, stream_id)
                    await notify(message["method"], message["params"])
    finally:
        if queue is not None:
            server.listeners.close(queue)
        if tasks is not None:
            tasks.close()
    return subs.closed(stream_id)  # the stream ended without the client leaving (not today)


async def _forward_tasks(tasks: TaskSubscription, stream_id: Any, notify: Any) -> None:
    async for view in tasks:
        message = wire.task_notification(view, stream_id)
        await notify(message["method"], message["params"])
