"""The task engine: create, advance, answer, cancel and expire tasks kept in a :class:`TaskStore`.

It knows nothing of sessions, transports or tools. It is given one callable, ``run_once``,
that runs a tool body **once** from the top with the answers recorded so far and says how that
went: finished with a result, stopped at questions it has no answers for, or failed. That is the
replay contract of 2026-07-28 rounds, with the store in place of the sealed ``requestState``:

* a waiting task holds no coroutine, only its record (arguments, answers, open questions);
* ``tasks/update`` records answers and, once nothing is open, the body runs again from the top;
* answers fresh from ``tasks/update`` match their question by key; after a run, each answer the
  run used is pinned to the fingerprint of the question it answered, as a round seals it;
* wire keys are never reused: a question asked again (a bad answer) gets a new key.

Exactly-once for what a tool does after its last question: the ``tasks/update`` that answers the
last open question moves the task to ``working`` and takes the run lease in the same
compare-and-set, so of two identical updates only one starts the final run; the run commits its
outcome only while it still holds the lease, and a cancel in between wins. A run whose process
died leaves a lapsed lease: by default the task then fails rather than run its tail twice.
See docs/decisions/tasks.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from elicitkit.protocol import tasks as wire
from elicitkit.protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, MCPError
from elicitkit.protocol.versions import MODERN_2026
from elicitkit.runtime.stopping import stop_tasks
from elicitkit.server import signals
from elicitkit.server.tasks.store import OpenRequest, RecordedAnswer, TaskRecord, TaskStore
from elicitkit.telemetry import hook as telemetry

if TYPE_CHECKING:
    from elicitkit.telemetry.otel import OTel

logger = logging.getLogger("elicitkit.tasks")

__all__ = [
    "Failed",
    "Finished",
    "NeedsInput",
    "Outcome",
    "Question",
    "RunOnce",
    "TaskRunner",
    "Validate",
    "check_response",
    "task_not_found",
]


# ----------------------------------------------------------------------------- what a run says


@dataclass(frozen=True, slots=True)
class Question:
    """An input request a run could not answer, under the tool's own key (``q1``, or ``key=``)."""

    key: str
    request: dict[str, Any]  # {"method": ..., "params": ...}
    fingerprint: str


@dataclass(frozen=True, slots=True)
class Finished:
    """The body returned: ``result`` is what the call answers (a tool error is still Finished)."""

    result: dict[str, Any]


@dataclass(frozen=True, slots=True)
class NeedsInput:
    """The body stopped at questions; ``answers_used`` are the answers it consumed, pinned."""

    questions: tuple[Question, ...]
    answers_used: Mapping[str, RecordedAnswer] = field(default_factory=dict)
    status_message: str | None = None


@dataclass(frozen=True, slots=True)
class Failed:
    """A JSON-RPC error the call would have answered (not a tool error: that is Finished)."""

    error: dict[str, Any]
    status_message: str | None = None


Outcome: TypeAlias = Finished | NeedsInput | Failed
# run_once(tool name, arguments, answers by the tool's key) -> what happened, running the body once
RunOnce: TypeAlias = Callable[[str, dict[str, Any], Mapping[str, RecordedAnswer]], Awaitable[Outcome]]
# validate(the open request, the response to it) -> why it cannot be used, or None
Validate: TypeAlias = Callable[[dict[str, Any], dict[str, Any]], "str | None"]

_ELICIT_ACTIONS = frozenset({"accept", "decline", "cancel"})


def check_response(request: dict[str, Any], response: dict[str, Any]) -> str | None:
    """The structural check done when an answer arrives; the tool's own validator runs on replay.

    An elicitation answer needs a known ``action`` and, when accepted with content, an object.
    Anything else a body can judge better itself.
    """
    if request.get("method") == "elicitation/create":
        action = response.get("action")
        if action not in _ELICIT_ACTIONS:
            return f"action must be one of accept, decline, cancel (got {action!r})"
        content = response.get("content")
        if content is not None and not isinstance(content, dict):
            return "content must be an object"
    return None


def task_not_found(task_id: str) -> MCPError:
    """-32602 for an id that is unknown, purged, expired or someone else's (one answer for all)."""
    return MCPError(INVALID_PARAMS, f"Failed to retrieve task: task {task_id!r} not found (it may have expired)")


INTERRUPTED = {"code": INTERNAL_ERROR, "message": "the server stopped while this task was running"}
OnInterrupted = Literal["fail", "rerun"]


# ----------------------------------------------------------------------------- the engine


class TaskRunner:
    """Drives tasks through their life; one per server process, many processes per store.

    ``run_once`` runs bodies; ``validate`` screens answers as they arrive (a failing answer is
    asked again under a new key at once, without a run); ``on_change`` hears every committed
    change (for ``notifications/tasks``); ``clock`` is injectable for tests.

    ``lease`` (seconds) bounds how long a run may go without renewing its claim; a run renews it
    every third of that, and a lease that lapses means its process died. ``on_interrupted`` says
    what happens to such a task: ``"fail"`` (at-most-once tails, the default) or ``"rerun"``
    (for idempotent tools: run again from the recorded answers); ``interrupted_policy(tool)``
    may choose per tool (None: the runner's).
    """

    def __init__(
        self,
        store: TaskStore,
        run_once: RunOnce,
        *,
        validate: Validate = check_response,
        on_change: Callable[[TaskRecord], None] | None = None,
        ttl_ms: int | None = 3_600_000,
        poll_interval_ms: int | None = 1000,
        lease: float = 30.0,
        on_interrupted: OnInterrupted = "fail",
        clock: Callable[[], float] = time.time,
        runner_id: str | None = None,
        interrupted_policy: Callable[[str], OnInterrupted | None] | None = None,
    ) -> None:
        _check_ms("ttl_ms", ttl_ms)
        _check_ms("poll_interval_ms", poll_interval_ms)
        if lease <= 0:
            raise ValueError(f"lease must be a positive number of seconds, got {lease!r}")
        self.store = store
        self._run_once = run_once
        self._validate = validate
        self._on_change = on_change
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.lease = lease
        self.on_interrupted = on_interrupted
        self._interrupted_policy = interrupted_policy  # per tool name; None from it: the default
        self._clock = clock
        self.runner_id = runner_id or uuid.uuid4().hex
        self._runs: dict[str, asyncio.Task[None]] = {}

    # -- creating and reading

    async def create(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        owner: str | None = None,
        answers: Mapping[str, RecordedAnswer] | None = None,
        ttl_ms: int | Literal["default"] | None = "default",
        poll_interval_ms: int | Literal["default"] | None = "default",
        start: bool = True,
    ) -> TaskRecord:
        """Store a new ``working`` task and start its first run; returns once ``get`` would find it.

        ``answers`` are the ones gathered before the task existed (a 2026 round that ended in a
        task), already pinned: the first run replays them and does not ask again.
        """
        ttl = self.ttl_ms if ttl_ms == "default" else ttl_ms
        poll = self.poll_interval_ms if poll_interval_ms == "default" else poll_interval_ms
        _check_ms("ttl_ms", ttl)
        _check_ms("poll_interval_ms", poll)
        now = self._clock()
        record = TaskRecord(
            task_id=str(uuid.uuid4()),
            tool=tool,
            arguments=arguments,
            status=wire.WORKING,
            created_at=now,
            updated_at=now,
            ttl_ms=ttl,
            poll_interval_ms=poll,
            answers=dict(answers or {}),
            owner=owner,
            lease_owner=self.runner_id,
            lease_expires_at=now + self.lease,
        )
        created = await self.store.create(record)
        self._changed(created)
        if start:
            self._spawn(created.task_id)
        return created

    async def get(self, task_id: str, *, owner: str | None = None) -> TaskRecord:
        """The task as it is now; -32602 if unknown, expired, or not ``owner``'s."""
        record = await self.store.get(task_id)
        if record is None or record.owner != owner:
            raise task_not_found(task_id)
        expires = record.expires_at
        if expires is not None and expires <= self._clock():
            await self._expire(record)
            raise task_not_found(task_id)
        return record

    # -- answering

    async def update(self, task_id: str, responses: Mapping[str, dict[str, Any]], *, owner: str | None = None) -> None:
        """Record answers to open questions; the task runs again once none is open.

        Keys that are not open (never issued, already answered, superseded) are ignored. Returns
        after the answers are stored, so a ``tasks/get`` right after shows them applied.
        """
        while True:
            record = await self.get(task_id, owner=owner)
            if record.status != wire.INPUT_REQUIRED:
                return  # nothing is open: every key is "not outstanding"
            changed = self._apply_answers(record, responses)
            if changed is None:
                return
            stored = await self.store.replace(changed, expected_version=record.version)
            if stored is None:
                continue  # someone else wrote first: read again, the keys may be gone
            if telemetry.current is not None:
                _report_answers(telemetry.current, record, responses, stored)
            self._changed(stored)
            if stored.status == wire.WORKING:
                self._spawn(stored.task_id)
            return

    def _apply_answers(self, record: TaskRecord, responses: Mapping[str, dict[str, Any]]) -> TaskRecord | None:
        open_requests = dict(record.open_requests)
        answers = dict(record.answers)
        issued = list(record.issued_keys)
        reasons: list[str] = []
        touched = False
        for wire_key, response in responses.items():
            question = open_requests.get(wire_key)
            if question is None:
                continue
            touched = True
            del open_requests[wire_key]
            reason = self._validate(question.request, response)
            if reason is None:
                answers[question.key] = RecordedAnswer(response, None)
                continue
            logger.info("task %s: answer to %r not accepted, asking again: %s", record.task_id, wire_key, reason)
            again = _next_key(question.key, issued)
            issued.append(again)
            open_requests[again] = OpenRequest(question.key, _reask(question.request, reason), question.fingerprint)
            reasons.append(f"the answer to {wire_key!r} was not accepted ({reason}); it is asked again as {again!r}")
        if not touched:
            return None
        now = self._clock()
        if open_requests:
            return dataclasses.replace(
                record,
                open_requests=open_requests,
                answers=answers,
                issued_keys=tuple(issued),
                status_message="; ".join(reasons) if reasons else record.status_message,
                updated_at=now,
            )
        # the last open question is answered: back to work, and this writer alone holds the run
        return dataclasses.replace(
            record,
            status=wire.WORKING,
            status_message=None,
            open_requests={},
            answers=answers,
            issued_keys=tuple(issued),
            lease_owner=self.runner_id,
            lease_expires_at=now + self.lease,
            updated_at=now,
        )

    # -- cancelling and expiring

    async def cancel(self, task_id: str, *, owner: str | None = None) -> None:
        """Mark a live task ``cancelled`` and stop its run here; a finished task is left as it is."""
        while True:
            record = await self.get(task_id, owner=owner)
            if record.terminal:
                return
            cancelled = dataclasses.replace(
                record,
                status=wire.CANCELLED,
                status_message="cancelled by the client",
                open_requests={},
                answers={},
                lease_owner=None,
                lease_expires_at=None,
                updated_at=self._clock(),
            )
            stored = await self.store.replace(cancelled, expected_version=record.version)
            if stored is not None:
                self._changed(stored)
                self._stop_local(task_id)
                return

    async def sweep(self, *, limit: int = 500) -> tuple[int, int]:
        """Delete expired tasks and settle interrupted runs; returns (expired, interrupted) counts.

        Every expired task goes, ``limit`` at a time (a batch per store call, so the loop never
        holds the store long): one sweep per interval that deleted only a fixed number would
        fall behind any creation rate above it, and the store would grow forever.
        """
        now = self._clock()
        expired = 0
        stuck: set[str] = set()  # changed while we looked: the next sweep tries again
        while True:
            batch = [t for t in await self.store.list_expired(now, limit=limit + len(stuck)) if t not in stuck]
            for task_id in batch:
                record = await self.store.get(task_id)
                if record is not None and await self._expire(record):
                    expired += 1
                else:
                    stuck.add(task_id)
            if len(batch) < limit:
                break
            await asyncio.sleep(0)  # let requests in between batches
        interrupted = 0
        for task_id in await self.store.list_stale(now, limit=limit):
            if self.running(task_id):
                continue  # ours and running: its heartbeat is just late
            record = await self.store.get(task_id)
            if record is None or record.status != wire.WORKING or not _lapsed(record, now):
                continue
            if await self._settle_interrupted(record, now):
                interrupted += 1
        return expired, interrupted

    async def _expire(self, record: TaskRecord) -> bool:
        self._stop_local(record.task_id)
        return await self.store.delete(record.task_id, expected_version=record.version)

    def interrupted_policy(self, tool: str) -> OnInterrupted:
        """What to do with ``tool``'s task whose run died: its own policy, else the runner's."""
        chosen = self._interrupted_policy(tool) if self._interrupted_policy is not None else None
        return chosen if chosen is not None else self.on_interrupted

    async def _settle_interrupted(self, record: TaskRecord, now: float) -> bool:
        if self.interrupted_policy(record.tool) == "rerun":
            claimed = dataclasses.replace(
                record, lease_owner=self.runner_id, lease_expires_at=now + self.lease, updated_at=now
            )
            stored = await self.store.replace(claimed, expected_version=record.version)
            if stored is None:
                return False
            self._changed(stored)
            self._spawn(stored.task_id)
            return True
        failed = dataclasses.replace(
            record,
            status=wire.FAILED,
            status_message="interrupted: the server stopped while this task was running",
            error=dict(INTERRUPTED),
            open_requests={},
            answers={},
            lease_owner=None,
            lease_expires_at=None,
            updated_at=now,
        )
        stored = await self.store.replace(failed, expected_version=record.version)
        if stored is not None:
            self._changed(stored)
        return stored is not None

    # -- running

    def start(self, task_id: str) -> None:
        """Run a task created with ``start=False`` (e.g. once its ``CreateTaskResult`` is on its way).

        Only a task this runner holds the lease of actually runs; anything else is a no-op.
        """
        self._spawn(task_id)

    def running(self, task_id: str) -> bool:
        """Whether this process is running the task's body right now."""
        run = self._runs.get(task_id)
        return run is not None and not run.done()

    async def wait(self, task_id: str) -> None:
        """Wait until this process's run of the task (if any) has committed or given up."""
        run = self._runs.get(task_id)
        if run is None:
            return
        try:
            await asyncio.shield(run)
        except asyncio.CancelledError:
            if not run.cancelled():
                raise  # the waiter itself was cancelled, not the run

    async def aclose(self) -> None:
        """Stop every run of this process; their tasks keep a lapsed lease for ``sweep`` to settle."""
        await stop_tasks(list(self._runs.values()))

    def _spawn(self, task_id: str) -> None:
        current = self._runs.get(task_id)
        if current is not None and not current.done():
            return  # already running here (a finished run may still await its done callback)
        run = asyncio.get_running_loop().create_task(self._drive(task_id), name=f"elicitkit-task-{task_id}")
        self._runs[task_id] = run
        run.add_done_callback(lambda done: self._forget(task_id, done))

    def _forget(self, task_id: str, run: asyncio.Task[None]) -> None:
        if self._runs.get(task_id) is run:
            del self._runs[task_id]
        if not run.cancelled() and run.exception() is not None:
            logger.error("task %s: the run failed", task_id, exc_info=run.exception())

    def _stop_local(self, task_id: str) -> None:
        run = self._runs.get(task_id)
        if run is not None and run is not asyncio.current_task():
            run.cancel()

    async def _drive(self, task_id: str) -> None:
        record = await self.store.get(task_id)
        if record is None or record.status != wire.WORKING or record.lease_owner != self.runner_id:
            return
        run_once = self._run_once

        async def run_body() -> Outcome:
            return await run_once(record.tool, record.arguments, record.answers)

        tel = telemetry.current
        run = tel.task_run(record.tool, task_id) if tel is not None else contextlib.nullcontext()
        with run:  # a span of its own: the run outlives the request that started it
            body = asyncio.get_running_loop().create_task(run_body(), name=f"elicitkit-task-body-{task_id}")
            try:
                outcome = await self._await_with_heartbeat(task_id, body)
            except asyncio.CancelledError:
                await stop_tasks([body])
                raise
            if outcome is not None:
                await self._commit(task_id, outcome)

    async def _await_with_heartbeat(self, task_id: str, body: asyncio.Task[Outcome]) -> Outcome | None:
        """The body's outcome, renewing the lease meanwhile; None if the task was taken from us."""
        interval = max(self.lease / 3, 0.001)
        while True:
            done, _ = await asyncio.wait({body}, timeout=interval)
            if done:
                return self._outcome_of(task_id, body)
            if not await self._renew(task_id):
                await stop_tasks([body])
                return None

    @staticmethod
    def _outcome_of(task_id: str, body: asyncio.Task[Outcome]) -> Outcome:
        try:
            return body.result()
        except MCPError as exc:
            return Failed(exc.to_error(), exc.message)
        except Exception as exc:
            logger.exception("task %s: run_once raised", task_id)
            return Failed({"code": INTERNAL_ERROR, "message": f"the task failed: {type(exc).__name__}"})

    async def _renew(self, task_id: str) -> bool:
        while True:
            record = await self.store.get(task_id)
            if record is None or record.status != wire.WORKING or record.lease_owner != self.runner_id:
                return False  # cancelled (here or elsewhere), expired, or claimed by another runner
            now = self._clock()
            renewed = dataclasses.replace(record, lease_expires_at=now + self.lease)
            if await self.store.replace(renewed, expected_version=record.version) is not None:
                return True

    async def _commit(self, task_id: str, outcome: Outcome) -> None:
        while True:
            record = await self.store.get(task_id)
            if record is None or record.status != wire.WORKING or record.lease_owner != self.runner_id:
                logger.info("task %s: outcome dropped, the task changed while it ran", task_id)
                return
            settled = self._settle(record, outcome)
            stored = await self.store.replace(settled, expected_version=record.version)
            if stored is not None:
                if telemetry.current is not None and stored.status == wire.INPUT_REQUIRED:
                    telemetry.current.task_waiting(1)
                self._changed(stored)
                return

    def _settle(self, record: TaskRecord, outcome: Outcome) -> TaskRecord:
        """The record after a run: the outcome, the run's lease released, all in one write."""
        idle = dataclasses.replace(record, lease_owner=None, lease_expires_at=None, updated_at=self._clock())
        if isinstance(outcome, Finished):
            return dataclasses.replace(
                idle, status=wire.COMPLETED, result=outcome.result, open_requests={}, answers={}, status_message=None
            )
        if isinstance(outcome, Failed):
            return dataclasses.replace(
                idle,
                status=wire.FAILED,
                error=outcome.error,
                open_requests={},
                answers={},
                status_message=outcome.status_message,
            )
        if not outcome.questions:  # a bug in run_once: fail the task rather than wait forever
            logger.error("task %s: run_once returned NeedsInput without questions", record.task_id)
            return dataclasses.replace(
                idle,
                status=wire.FAILED,
                error={"code": INTERNAL_ERROR, "message": "the task asked for input but named no question"},
                open_requests={},
                answers={},
                status_message=None,
            )
        issued = list(record.issued_keys)
        open_requests: dict[str, OpenRequest] = {}
        for question in outcome.questions:
            key = _next_key(question.key, issued)
            issued.append(key)
            open_requests[key] = OpenRequest(question.key, question.request, question.fingerprint)
        return dataclasses.replace(
            idle,
            status=wire.INPUT_REQUIRED,
            open_requests=open_requests,
            answers=dict(outcome.answers_used),
            issued_keys=tuple(issued),
            status_message=outcome.status_message,
        )

    def _changed(self, record: TaskRecord) -> None:
        if self._on_change is not None:
            try:
                self._on_change(record)
            except Exception:
                logger.exception("task %s: on_change hook failed", record.task_id)

    # -- the wire methods

    async def handle(self, method: str, params: Any, *, declared: bool, owner: str | None = None) -> dict[str, Any]:
        """Answer ``tasks/get``, ``tasks/update`` or ``tasks/cancel`` (and -32601 the removed ones).

        ``declared``: whether this request's client capabilities declare the extension; checked
        before anything else, so an undeclared request gets -32021 even for an unknown id.
        """
        if method in wire.REMOVED_METHODS or method not in wire.METHODS:
            raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")
        if not declared:
            raise wire.missing_extension()
        if method == wire.GET:
            ref = wire.parse_get(params)
            return wire.get_task_result((await self.get(ref.task_id, owner=owner)).view())
        if method == wire.UPDATE:
            update = wire.parse_update(params)
            await self.update(update.task_id, update.input_responses, owner=owner)
            return wire.ack()
        ref = wire.parse_cancel(params)
        await self.cancel(ref.task_id, owner=owner)
        return wire.ack()


def _next_key(key: str, issued: list[str]) -> str:
    """``key`` if it was never shown in this task, else ``key.2``, ``key.3``...: keys are never reused."""
    if key not in issued:
        return key
    n = 2
    while f"{key}.{n}" in issued:
        n += 1
    return f"{key}.{n}"


def _reask(request: dict[str, Any], reason: str) -> dict[str, Any]:
    """The same request, its message (if it has one) saying why the last answer was refused."""
    params = request.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("message"), str):
        return request
    note = f"{params['message']}\n\n(Your previous answer was not accepted: {reason}. Please try again.)"
    return {**request, "params": {**params, "message": note}}


def _check_ms(name: str, value: int | None) -> None:
    """The wire allows only positive integer milliseconds (or None where unlimited)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise ValueError(f"{name} must be a positive integer number of milliseconds or None, got {value!r}")


def _lapsed(record: TaskRecord, now: float) -> bool:
    return record.lease_expires_at is None or record.lease_expires_at <= now


def _report_answers(tel: OTel, before: TaskRecord, responses: Mapping[str, dict[str, Any]], after: TaskRecord) -> None:
    """Answers a ``tasks/update`` stored: each one's event, timed from when the task last changed
    (it began to wait, or took an earlier answer), on any instance and after a restart alike."""
    for wire_key, response in responses.items():
        question = before.open_requests.get(wire_key)
        if question is None:
            continue
        params = question.request.get("params")
        signals.answered(
            tel,
            params if isinstance(params, dict) else {},
            response,
            era=MODERN_2026,
            round_=None,
            key=question.key,
            origin="task",
            since=before.updated_at,
        )
    if after.status == wire.WORKING:
        tel.task_waiting(-1)
