"""The Tasks extension (SEP-2663) without I/O: identifiers, statuses, params, result shapes.

A 2026-07-28 server may answer a ``tools/call`` with a *task* instead of the result; the client
then reads it with ``tasks/get``, answers its questions with ``tasks/update`` and stops it with
``tasks/cancel``. Everything both sides need to agree on byte for byte lives here, so the server
engine, the client driver and the tests share one definition. Times are epoch seconds inside
elicitkit and ISO 8601 strings on the wire; durations are integer milliseconds on the wire.
See docs/decisions/tasks.md for the rules and the conformance checks behind each shape.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal, TypeAlias

from elicitkit.errors import TaskError
from elicitkit.protocol.errors import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY, MCPError
from elicitkit.protocol.subscriptions import SUBSCRIPTION_ID_META, ListenFilter

EXTENSION_ID: Final = "io.modelcontextprotocol/tasks"

TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]
WORKING: Final = "working"
INPUT_REQUIRED: Final = "input_required"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
CANCELLED: Final = "cancelled"
STATUSES: frozenset[str] = frozenset({WORKING, INPUT_REQUIRED, COMPLETED, FAILED, CANCELLED})
TERMINAL: frozenset[str] = frozenset({COMPLETED, FAILED, CANCELLED})

# Allowed moves. A live status may also be restated (new message, new open requests); a terminal
# one never changes again.
TRANSITIONS: Mapping[str, frozenset[str]] = {
    WORKING: frozenset({WORKING, INPUT_REQUIRED, COMPLETED, FAILED, CANCELLED}),
    INPUT_REQUIRED: frozenset({INPUT_REQUIRED, WORKING, COMPLETED, FAILED, CANCELLED}),
    COMPLETED: frozenset(),
    FAILED: frozenset(),
    CANCELLED: frozenset(),
}

GET: Final = "tasks/get"
UPDATE: Final = "tasks/update"
CANCEL: Final = "tasks/cancel"
METHODS: frozenset[str] = frozenset({GET, UPDATE, CANCEL})
# The 2025-11-25 task methods that SEP-2663 removed: -32601 on a 2026 server.
REMOVED_METHODS: frozenset[str] = frozenset({"tasks/result", "tasks/list"})
NOTIFICATION: Final = "notifications/tasks"
# Requests a server may answer with a task (SEP-2663 lists only tools/call so far).
TASK_CAPABLE_METHODS: frozenset[str] = frozenset({"tools/call"})
# Over HTTP these methods mirror params.taskId into Mcp-Name, so proxies can route by task.
NAME_PARAM: Mapping[str, str] = {GET: "taskId", UPDATE: "taskId", CANCEL: "taskId"}

RESULT_TASK: Final = "task"
RESULT_COMPLETE: Final = "complete"
# 2025-11-25 key that must not appear on a result inlined by tasks/get.
RELATED_TASK_META: Final = "io.modelcontextprotocol/related-task"

MAX_TASK_ID_LENGTH: Final = 256  # ours are 36; anything far longer is not one of ours


# ----------------------------------------------------------------------------- capabilities


def server_extensions() -> dict[str, Any]:
    """What a server puts under ``capabilities.extensions`` (never the 2025 ``capabilities.tasks``)."""
    return {EXTENSION_ID: {}}


def client_extensions() -> dict[str, Any]:
    """What a client puts under ``clientCapabilities.extensions`` on each request that accepts a task."""
    return {EXTENSION_ID: {}}


def declares_tasks(client_capabilities: Any) -> bool:
    """Whether a request's client capabilities declare the extension (its settings must be an object)."""
    if not isinstance(client_capabilities, dict):
        return False
    extensions = client_capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(EXTENSION_ID), dict)


def required_capability() -> dict[str, Any]:
    """The ``requiredCapabilities`` object of a -32021 about this extension."""
    return {"extensions": {EXTENSION_ID: {}}}


def missing_extension(message: str | None = None) -> MCPError:
    """-32021 for a request that needs the extension but did not declare it."""
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        message or f"this request needs the client to declare the {EXTENSION_ID} extension",
        {"requiredCapabilities": required_capability()},
    )


# ----------------------------------------------------------------------------- state machine


def can_transition(current: str, new: str) -> bool:
    """Whether a task may go from ``current`` to ``new`` (restating a live status counts)."""
    return new in TRANSITIONS.get(current, frozenset())


def is_terminal(status: str) -> bool:
    return status in TERMINAL


class InvalidTransition(TaskError, ValueError):
    """A bug in the caller: a terminal task changed, or a status that does not exist."""


def check_transition(current: str, new: str) -> None:
    """Raise :class:`InvalidTransition` unless :func:`can_transition`."""
    if new not in STATUSES:
        raise InvalidTransition(f"unknown task status {new!r}")
    if not can_transition(current, new):
        raise InvalidTransition(f"a task cannot go from {current!r} to {new!r}")


# ----------------------------------------------------------------------------- params


@dataclass(frozen=True, slots=True)
class TaskRef:
    """Params of ``tasks/get`` and ``tasks/cancel``."""

    task_id: str


@dataclass(frozen=True, slots=True)
class TaskUpdate:
    """Params of ``tasks/update``: responses keyed by the input request they answer."""

    task_id: str
    input_responses: Mapping[str, dict[str, Any]]


def _params(params: Any, method: str) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise MCPError(INVALID_PARAMS, f"{method}: params must be an object")
    return params


def _task_id(params: dict[str, Any], method: str) -> str:
    task_id = params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise MCPError(INVALID_PARAMS, f"{method}: params.taskId must be a non-empty string")
    if len(task_id) > MAX_TASK_ID_LENGTH:
        raise MCPError(INVALID_PARAMS, f"{method}: params.taskId is longer than {MAX_TASK_ID_LENGTH} characters")
    return task_id


def parse_get(params: Any) -> TaskRef:
    """``tasks/get`` params; -32602 when ``taskId`` is missing or not a string."""
    return TaskRef(_task_id(_params(params, GET), GET))


def parse_cancel(params: Any) -> TaskRef:
    """``tasks/cancel`` params; -32602 when ``taskId`` is missing or not a string."""
    return TaskRef(_task_id(_params(params, CANCEL), CANCEL))


def parse_update(params: Any) -> TaskUpdate:
    """``tasks/update`` params; -32602 unless ``inputResponses`` maps keys to objects.

    Keys are not checked against the task here: unknown or already answered keys are ignored by
    the server (SEP-2663), which only the task's record can tell.
    """
    body = _params(params, UPDATE)
    task_id = _task_id(body, UPDATE)
    responses = body.get("inputResponses")
    if not isinstance(responses, dict):
        raise MCPError(INVALID_PARAMS, f"{UPDATE}: params.inputResponses must be an object keyed by input request")
    for key, response in responses.items():
        if not isinstance(response, dict):
            raise MCPError(INVALID_PARAMS, f"{UPDATE}: inputResponses[{key!r}] must be an object")
    return TaskUpdate(task_id, responses)


def check_listen(accepted: ListenFilter, client_capabilities: Any) -> None:
    """-32021 when a ``subscriptions/listen`` asks for ``taskIds`` without declaring the extension."""
    if accepted.task_ids and not declares_tasks(client_capabilities):
        raise missing_extension("task status notifications need the client to declare the tasks extension")


# ----------------------------------------------------------------------------- shapes


def iso8601(timestamp: float) -> str:
    """Epoch seconds as the wire's ISO 8601, UTC, millisecond precision (``2026-11-23T21:30:00.123Z``)."""
    moment = datetime.fromtimestamp(timestamp, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso8601(text: str) -> float:
    """The inverse of :func:`iso8601` (any offset accepted), for clients reading tasks."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _duration_ms(value: int | None, name: str, *, nullable: bool) -> int | None:
    if value is None:
        if nullable:
            return None
        raise ValueError(f"{name} is required")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer number of milliseconds, got {value!r}")
    return value


def duration_ms(seconds: float | None) -> int | None:
    """A duration in seconds as the wire's integer milliseconds (at least 1); None stays None."""
    if seconds is None:
        return None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"a task duration must be a positive number of seconds, got {seconds!r}")
    return max(1, round(seconds * 1000))


@dataclass(frozen=True, slots=True)
class TaskView:
    """What the wire shows of a task, whatever store it came from.

    ``input_requests`` is shown only while ``input_required``, ``result`` only when completed,
    ``error`` only when failed: each shape below picks the field its status calls for.
    """

    task_id: str
    status: str
    created_at: float
    updated_at: float
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    status_message: str | None = None
    input_requests: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown task status {self.status!r}")
        _duration_ms(self.ttl_ms, "ttlMs", nullable=True)
        _duration_ms(self.poll_interval_ms, "pollIntervalMs", nullable=True)


def task_fields(view: TaskView) -> dict[str, Any]:
    """The base ``Task``: id, status, times, ttl, poll interval, message. No status payload."""
    out: dict[str, Any] = {
        "taskId": view.task_id,
        "status": view.status,
        "createdAt": iso8601(view.created_at),
        "lastUpdatedAt": iso8601(view.updated_at),
        "ttlMs": view.ttl_ms,
    }
    if view.poll_interval_ms is not None:
        out["pollIntervalMs"] = view.poll_interval_ms
    if view.status_message is not None:
        out["statusMessage"] = view.status_message
    return out


def detailed_task(view: TaskView) -> dict[str, Any]:
    """The ``DetailedTask``: the base task plus the one payload field its status calls for."""
    out = task_fields(view)
    if view.status == INPUT_REQUIRED:
        out["inputRequests"] = dict(view.input_requests)
    elif view.status == COMPLETED:
        out["result"] = inline_result(view.result or {"content": []})
    elif view.status == FAILED:
        out["error"] = view.error or {"code": -32603, "message": "Internal error"}
    return out


def create_task_result(view: TaskView) -> dict[str, Any]:
    """The answer to a task-augmented request: flat, ``resultType: "task"``, no payload fields."""
    out = task_fields(view)
    out["resultType"] = RESULT_TASK
    return out


def get_task_result(view: TaskView) -> dict[str, Any]:
    """The answer to ``tasks/get``: the detailed task, ``resultType: "complete"``."""
    out = detailed_task(view)
    out["resultType"] = RESULT_COMPLETE
    return out


def ack() -> dict[str, Any]:
    """The answer to ``tasks/update`` and ``tasks/cancel``: nothing but the discriminator."""
    return {"resultType": RESULT_COMPLETE}


def task_notification(view: TaskView, subscription_id: str | int) -> dict[str, Any]:
    """A whole ``notifications/tasks`` message for one ``subscriptions/listen`` stream."""
    params = detailed_task(view)
    params["_meta"] = {SUBSCRIPTION_ID_META: subscription_id}
    return {"jsonrpc": "2.0", "method": NOTIFICATION, "params": params}


def inline_result(result: dict[str, Any]) -> dict[str, Any]:
    """A finished call's result as ``tasks/get`` inlines it: the 2025 related-task key removed."""
    meta = result.get("_meta")
    if not isinstance(meta, dict) or RELATED_TASK_META not in meta:
        return result
    out = dict(result)
    rest = {k: v for k, v in meta.items() if k != RELATED_TASK_META}
    if rest:
        out["_meta"] = rest
    else:
        del out["_meta"]
    return out


def error_object(exc: MCPError) -> dict[str, Any]:
    """The ``error`` of a failed task: the JSON-RPC error the call would have answered."""
    return exc.to_error()


def is_create_task_result(result: Any) -> bool:
    """Client side: whether a result is a task handle rather than the call's own result."""
    return (
        isinstance(result, dict) and result.get("resultType") == RESULT_TASK and isinstance(result.get("taskId"), str)
    )


def poll_delay(task: dict[str, Any], default: float = 1.0) -> float:
    """Client side: seconds to wait before the next ``tasks/get``, as the task's ``pollIntervalMs`` says."""
    interval = task.get("pollIntervalMs")
    if isinstance(interval, int) and not isinstance(interval, bool) and interval > 0:
        return interval / 1000
    return default


def unseen_requests(task: dict[str, Any], seen: set[str]) -> dict[str, dict[str, Any]]:
    """Client side: the ``inputRequests`` of an ``input_required`` task not handled yet.

    Keys are unique for a task's life, so a key seen on an earlier poll is the same request: it is
    not put to the person twice.
    """
    if task.get("status") != INPUT_REQUIRED:
        return {}
    requests = task.get("inputRequests")
    if not isinstance(requests, dict):
        return {}
    return {k: v for k, v in requests.items() if k not in seen and isinstance(v, dict)}
