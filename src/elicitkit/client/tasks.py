"""Calling a tool as a task (Tasks extension, SEP-2663) from the client side.

A call that declares the extension may be answered with a task instead of a result. The client
then polls ``tasks/get`` at the server's ``pollIntervalMs``; when the task stands in
``input_required`` it answers each new input request with the client's own callbacks (the same
``elicitation_callback`` a plain call uses), sends the answers with ``tasks/update``, and returns
the task's ``result`` once it completes (or raises its ``error``). In hands-off mode the call
returns a :class:`TaskHandle` instead, so another process can look, answer or cancel later.

Only the 2026-07-28 era knows tasks; on a handshake connection a task call is a plain call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from elicitkit.client.rounds import InputRequiredResult, drive
from elicitkit.protocol import tasks as wire
from elicitkit.protocol.errors import INTERNAL_ERROR, MCPError
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.protocol.versions import META_CLIENT_CAPABILITIES

if TYPE_CHECKING:
    from elicitkit.client.client import Client

__all__ = [
    "TaskCancelled",
    "TaskHandle",
    "answer_task",
    "cancel_task",
    "declaring",
    "follow_task",
    "get_task",
    "start_task",
]


class TaskCancelled(MCPError):
    """The task ended ``cancelled`` (by this client, another one, or the server)."""

    def __init__(self, task_id: str) -> None:
        super().__init__(INTERNAL_ERROR, f"task {task_id} was cancelled")
        self.task_id = task_id


@dataclass(frozen=True, slots=True)
class TaskHandle:
    """A task the server made for a call: enough to look at it, answer it or cancel it later,
    from this client or any other that reaches the same server (the id is the capability)."""

    task_id: str
    status: str
    poll_interval_ms: int | None = None
    ttl_ms: int | None = None

    @classmethod
    def from_wire(cls, task: dict[str, Any]) -> TaskHandle:
        poll = task.get("pollIntervalMs")
        ttl = task.get("ttlMs")
        return cls(
            str(task["taskId"]),
            str(task.get("status", wire.WORKING)),
            poll if isinstance(poll, int) else None,
            ttl if isinstance(ttl, int) else None,
        )


def declaring(params: JSON) -> JSON:
    """``params`` whose own ``_meta`` declares the Tasks extension (for this one request)."""
    meta = dict(params.get("_meta") or {})
    caps = dict(meta.get(META_CLIENT_CAPABILITIES) or {})
    caps["extensions"] = {**(caps.get("extensions") or {}), **wire.client_extensions()}
    meta[META_CLIENT_CAPABILITIES] = caps
    return {**params, "_meta": meta}


def _task_params(task_id: str, **extra: Any) -> JSON:
    return declaring({"taskId": task_id, **extra})


async def start_task(
    client: Client, name: str, arguments: JSON | None = None, *, timeout: float | None = None
) -> TaskHandle | JSON:
    """Call ``name`` declaring the extension: a :class:`TaskHandle` if the server made a task,
    else the call's own result (a tool that does not run as a task, or finished at once).
    Questions the tool asks before the task exists are answered here, as in a plain call, and
    every round declares the extension again (there is no session to remember it)."""
    params: JSON = {"name": name, "arguments": arguments or {}}

    async def send(method: str, round_params: JSON) -> JSON:
        return await client.connection.request(method, declaring(round_params), timeout=timeout)

    outcome = await drive(
        send,
        client.answer_input_requests,
        "tools/call",
        params,
        first=await send("tools/call", params),
        max_rounds=client.max_input_rounds,
        backoff=client.input_backoff,
        also_final=frozenset({wire.RESULT_TASK}),
    )
    assert isinstance(outcome, dict)  # input_required="handle": every round is answered here
    result = outcome
    if wire.is_create_task_result(result):
        return TaskHandle.from_wire(result)
    return result


async def get_task(client: Client, task_id: str) -> JSON:
    """``tasks/get``: the task as it stands (status, and its result, error or open questions)."""
    return await client.connection.request(wire.GET, _task_params(task_id))


async def answer_task(client: Client, task_id: str, responses: JSON) -> None:
    """``tasks/update``: answers to open input requests, by their keys (others are ignored)."""
    await client.connection.request(wire.UPDATE, _task_params(task_id, inputResponses=responses))


async def cancel_task(client: Client, task_id: str) -> None:
    """``tasks/cancel``: ask the server to stop the task (a finished task is left as it is)."""
    await client.connection.request(wire.CANCEL, _task_params(task_id))


async def follow_task(
    client: Client,
    task_id: str,
    *,
    default_poll: float = 1.0,
    on_status: Callable[[JSON], Awaitable[None] | None] | None = None,
    max_poll: float | None = None,
) -> JSON:
    """Poll the task until it ends, answering its questions with the client's callbacks.

    Returns the task's ``result`` (what the call would have answered); raises the task's
    ``error`` as :class:`MCPError`, or :class:`TaskCancelled`. Each input request is put to the
    person once, however many polls show it (keys are never reused within a task).
    ``max_poll``: never wait longer than this between polls, whatever the server advises (a
    test harness keeps its tests fast that way).
    """
    seen: set[str] = set()
    while True:
        task = await get_task(client, task_id)
        if on_status is not None:
            shown = on_status(task)
            if shown is not None:
                await shown
        status = task.get("status")
        if status == wire.COMPLETED:
            result = task.get("result")
            return result if isinstance(result, dict) else {"content": []}
        if status == wire.FAILED:
            error = task.get("error")
            raise MCPError.from_error(
                error if isinstance(error, dict) else {"code": INTERNAL_ERROR, "message": "failed"}
            )
        if status == wire.CANCELLED:
            raise TaskCancelled(task_id)
        fresh = wire.unseen_requests(task, seen)
        if fresh:
            seen.update(fresh)
            pending = InputRequiredResult.from_wire("tasks/get", {"taskId": task_id}, {"inputRequests": fresh})
            answers = await client.answer_input_requests(pending)
            await answer_task(client, task_id, answers)
            continue  # look again at once: the answers may have finished it or asked more
        delay = wire.poll_delay(task, default_poll)
        await anyio.sleep(delay if max_poll is None else min(delay, max_poll))
