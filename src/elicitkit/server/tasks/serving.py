"""The Tasks extension on a :class:`~elicitkit.server.server.Server`: which tools run as tasks,
the one :class:`TaskRunner` of the process, and the wire methods that reach it.

Only the 2026-07-28 era knows tasks. A ``tools/call`` of a task tool from a request that declares
the extension is answered with a ``CreateTaskResult`` (after the questions the tool asks before
becoming a task, see :meth:`Context.run_as_task`); ``tasks/get|update|cancel`` go to the runner.
The runner and its store are made on first use, on the loop that serves, so a server that never
runs a task opens no database. With them start the sweeper and, when the store is shared by a fleet
(``RedisTaskStore``), the relay that carries other instances' changes to this instance's listen
streams (:mod:`elicitkit.server.tasks.relay`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from elicitkit.protocol import tasks as wire
from elicitkit.protocol.errors import METHOD_NOT_FOUND, MCPError
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.runtime.stopping import stop_tasks
from elicitkit.server.calling import run_tool
from elicitkit.server.tasks.events import TaskEvents
from elicitkit.server.tasks.relay import TaskChangeRelay, has_change_feed
from elicitkit.server.tasks.run import make_run_once, pinned_answers
from elicitkit.server.tasks.runner import TaskRunner, task_not_found
from elicitkit.server.tasks.store import SQLiteTaskStore, TaskStore

if TYPE_CHECKING:
    from elicitkit.server.scope import RequestScope
    from elicitkit.server.server import Server
    from elicitkit.server.tools import Tool

logger = logging.getLogger("elicitkit.tasks")

__all__ = [
    "ENV_TASK_DB",
    "LEASE",
    "SWEEP_INTERVAL",
    "TaskMode",
    "TaskOptions",
    "TaskSupport",
    "default_task_db",
]

ENV_TASK_DB = "ELICITKIT_TASK_DB"
SWEEP_INTERVAL = 30.0  # seconds between sweeps for expired tasks and runs whose process died
LEASE = 30.0  # seconds a task run holds its claim between renewals (TaskRunner's lease)
RELAY_START_TIMEOUT = 5.0  # seconds the first task call waits for the relay's first subscription

TaskMode = Literal["never", "optional", "required"]


@dataclass(frozen=True, slots=True)
class TaskOptions:
    """How one tool runs as a task (``@server.tool(task=...)``)."""

    mode: TaskMode
    ttl_ms: int | Literal["default"] | None = "default"
    poll_interval_ms: int | Literal["default"] | None = "default"
    ask_before_task: bool = False  # run the body in the call until ctx.run_as_task()
    rerun_on_restart: bool = False  # a run whose process died runs again (idempotent tools only)


def default_task_db(server_name: str) -> Path:
    """Where a server keeps its tasks unless told otherwise: ``$ELICITKIT_TASK_DB``, else a file
    per server name under the user's state directory (``$XDG_STATE_HOME`` or ``~/.local/state``)."""
    explicit = os.environ.get(ENV_TASK_DB)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", server_name).strip("._") or "server"
    return Path(base) / "elicitkit" / safe / "tasks.db"


class TaskSupport:
    """A server's tasks: per-tool options, the store, the runner and its sweeper."""

    def __init__(self, server: Server, store: TaskStore | None, *, sweep_interval: float = SWEEP_INTERVAL) -> None:
        self.server = server
        self.options: dict[str, TaskOptions] = {}
        self._store = store
        self._owns_store = store is None
        self._runner: TaskRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self.relay: TaskChangeRelay | None = None  # other instances' changes, with a shared store
        self._relaying: asyncio.Task[None] | None = None
        self.sweep_interval = sweep_interval
        # seconds a run may go without renewing its claim before another process takes it over
        # (a fleet sharing a store may want it short, with a short sweep_interval to match)
        self.lease = LEASE
        self.events = TaskEvents()  # committed changes, for subscriptions/listen streams

    @property
    def enabled(self) -> bool:
        """Whether any tool may run as a task (then discover advertises the extension)."""
        return any(o.mode != "never" for o in self.options.values())

    # -- the runner, made on first use --------------------------------------------------

    @property
    def store(self) -> TaskStore:
        if self._store is None:
            self._store = SQLiteTaskStore(default_task_db(self.server.name))
        return self._store

    async def runner(self) -> TaskRunner:
        """The process's runner, on the running loop (swept once now, then every ``sweep_interval``).

        With a shared store, the change relay starts too, and the first call waits (boundedly)
        until it is subscribed, so a listen stream opened after it hears every later change.
        """
        loop = asyncio.get_running_loop()
        if self._runner is not None and self._loop is loop:
            return self._runner
        session = self.server.create_detached_session()
        runner = TaskRunner(
            self.store,
            make_run_once(self.server, session),
            on_change=self.events.publish,
            lease=self.lease,
            interrupted_policy=self._interrupted_policy,
        )
        self._runner, self._loop = runner, loop
        try:
            await runner.sweep()
        except Exception:
            logger.exception("sweeping the task store at start-up failed")
        self._sweeper = loop.create_task(self._sweep_forever(runner), name="elicitkit-task-sweeper")
        store = self.store
        if has_change_feed(store):  # a fleet: a single process starts nothing here
            relay = TaskChangeRelay(store, self.events)
            self.relay = relay
            self._relaying = loop.create_task(relay.run(), name="elicitkit-task-relay")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(relay.tried.wait(), RELAY_START_TIMEOUT)
        return runner

    def _interrupted_policy(self, tool: str) -> Literal["fail", "rerun"] | None:
        options = self.options.get(tool)
        return "rerun" if options is not None and options.rerun_on_restart else None

    async def _sweep_forever(self, runner: TaskRunner) -> None:
        while True:
            await asyncio.sleep(self.sweep_interval)
            try:
                await runner.sweep()
            except Exception:
                logger.exception("sweeping the task store failed")

    def adopt_store(self, store: TaskStore) -> None:
        """A fleet's shared store (``use_backplane``), unless this server was given its own or made one."""
        if self._owns_store and self._store is None:
            self._store = store

    async def aclose(self) -> None:
        """Stop the sweeper, the relay and this process's runs (their tasks stay in the store for the next
        process to settle), and close the store if the server made it."""
        await stop_tasks(task for task in (self._sweeper, self._relaying) if task is not None)
        self._sweeper = self._relaying = None
        self.relay = None
        if self._runner is not None:
            await self._runner.aclose()
            self._runner = None
        if self._owns_store and self._store is not None:
            await self._store.close()
            self._store = None

    # -- the wire ------------------------------------------------------------------------

    def owner(self, scope: RequestScope) -> str | None:
        """Who a task belongs to: the server's principal hook, else the transport's identity."""
        hook = self.server.principal_hook
        if hook is not None:
            return hook(scope)
        return scope.principal

    def call(self, tool: Tool, options: TaskOptions, arguments: dict[str, Any], scope: RequestScope) -> Awaitable[JSON]:
        """A 2026 ``tools/call`` of a task tool from a request that declared the extension."""
        return self._call(tool, options, arguments, scope)  # plain: no frame of ours around the call

    async def _call(self, tool: Tool, options: TaskOptions, arguments: dict[str, Any], scope: RequestScope) -> JSON:
        answers = {}
        if options.ask_before_task:  # the questions before the task are resolved in this call
            result = await scope.run(run_tool(self.server, tool, arguments, scope), self.server)
            became = scope.became_task()
            if became is None:
                return result  # an InputRequiredResult, or it finished without becoming a task
            answers = pinned_answers(became)
        runner = await self.runner()
        record = await runner.create(
            tool.name,
            arguments,
            owner=self.owner(scope),
            answers=answers,
            ttl_ms=options.ttl_ms,
            poll_interval_ms=options.poll_interval_ms,
        )
        return wire.create_task_result(record.view())

    async def handle(self, scope: RequestScope) -> JSON:
        """``tasks/get``, ``tasks/update``, ``tasks/cancel`` (and -32601 for the removed ones)."""
        method = scope.request.method
        scope.serve_2026_only(method)
        if method in wire.REMOVED_METHODS:
            raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")
        declared = wire.declares_tasks(scope.client_capabilities)
        if declared and not self.enabled and self._store is None:
            # no task tool and no store given: no task can exist (and no database is opened)
            raise task_not_found(str(scope.params.get("taskId")))
        if not declared:
            raise wire.missing_extension()
        runner = await self.runner()
        return await runner.handle(method, scope.params, declared=True, owner=self.owner(scope))
