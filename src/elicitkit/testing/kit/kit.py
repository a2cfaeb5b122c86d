"""The ``elicitkit`` fixture's object: connect a server to a scripted person, on one era and transport.

One :class:`Kit` per test (per era and transport under the ``elicitkit_eras`` marker, and per
task column: the era's calls run as tasks). It owns the person, the record of questions, the
servers and child processes it started, and the faults a test can inject. Everything it
starts it stops.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from elicitkit import Client, ConnectionClosed, Server
from elicitkit.client.results import CallToolResult, GetPromptResult, ReadResourceResult
from elicitkit.client.tasks import TaskHandle, follow_task
from elicitkit.server.tasks.serving import ENV_TASK_DB
from elicitkit.testing.kit.asked import Questions, schema_diff
from elicitkit.testing.kit.script import Person
from elicitkit.testing.kit.serving import (
    ERAS,
    MODERN_ERAS,
    STATE_KEYS_ENV,
    TASK_ERAS,
    TASK_SUFFIX,
    TRANSPORTS,
    Child,
    Tap,
    child_env,
    client_options,
    http_in_process,
    new_state_keys,
    resolve,
    serve_command,
    start_http_child,
)

DEFAULT_ERA = "2025-11-25"
DEFAULT_TIMEOUT = 30.0
UPDATE_FLAG = "--elicitkit-update-snapshots"
TASK_POLL = 0.02  # seconds between tasks/get at most: a test need not wait the server's advised interval


@dataclass(frozen=True)
class Case:
    """One cell of the era matrix."""

    era: str
    transport: str
    id: str = ""
    task: bool = False  # the kit's calls run as tasks (the Tasks extension)

    def __post_init__(self) -> None:
        if self.era not in ERAS:
            known = ", ".join([*ERAS, *(era + TASK_SUFFIX for era in TASK_ERAS)])
            raise ValueError(f"unknown era {self.era!r}; the kit knows {known}")
        if self.transport not in TRANSPORTS:
            raise ValueError(f"unknown transport {self.transport!r}; the kit knows {', '.join(TRANSPORTS)}")
        if self.task and self.era not in TASK_ERAS:
            raise ValueError(f"{self.era} has no tasks: the Tasks extension exists on {', '.join(TASK_ERAS)} only")

    @property
    def column(self) -> str:
        """The era as the matrix names it: ``2026-07-28``, or ``2026-07-28-task`` for the task column."""
        return self.era + TASK_SUFFIX if self.task else self.era


_RESULTS: dict[str, Any] = {
    "tools/call": CallToolResult,
    "prompts/get": GetPromptResult,
    "resources/read": ReadResourceResult,
}

_task_dir: list[str] = []


def session_task_db() -> str:
    """One task database for the test session, removed when it ends (a store opened from it
    may outlive the test that opened it: a module-level server keeps its store)."""
    if not _task_dir:
        _task_dir.append(tempfile.mkdtemp(prefix="elicitkit-tasks-"))
        atexit.register(shutil.rmtree, _task_dir[0], True)
    return os.path.join(_task_dir[0], "tasks.db")


def tamper(state: str) -> str:
    """``state`` with one character changed in the middle: what an attacker (or a bug) sends back."""
    if not state:
        return "x"
    middle = len(state) // 2
    swapped = "A" if state[middle] != "A" else "B"
    return state[:middle] + swapped + state[middle + 1 :]


@dataclass
class SnapshotLog:
    """What the session's snapshot assertions touched: for the summary at the end of the run."""

    written: list[Path] = field(default_factory=list)
    checked: set[Path] = field(default_factory=set)

    def seen(self, path: Path) -> None:
        self.checked.add(path)

    def stale(self) -> list[Path]:
        """Snapshot files beside the ones this run checked that no assertion of this run read."""
        folders = {path.parent for path in self.checked}
        found = (p for folder in folders if folder.is_dir() for p in folder.glob("*.json"))
        return sorted(p for p in found if p not in self.checked)


class _ShortLived:
    """A state codec that seals with a short lifetime: rounds expire while the test waits."""

    def __init__(self, inner: Any, seconds: int) -> None:
        self.inner = inner
        self.seconds = seconds

    def seal(self, payload: Any, binding: Any, **options: Any) -> Any:
        return self.inner.seal(payload, binding, ttl_seconds=self.seconds)

    def open(self, token: str, binding: Any) -> Any:
        return self.inner.open(token, binding)


class _Connection:
    """``Kit.connect``'s context manager: a class, so that its frames can be hidden from a failing
    test's traceback (``__tracebackhide__``), which a generator-based one cannot do."""

    def __init__(self, kit: Kit, case: Case, server: Server | str, options: dict[str, Any]) -> None:
        self.kit = kit
        self.case = case
        self.server = server
        self.options = options
        self.stack = AsyncExitStack()
        self.log: Any = None
        self.entry: tuple[Client, Server] | None = None

    async def __aenter__(self) -> Client:
        __tracebackhide__ = True
        kit, stack = self.kit, self.stack
        target = resolve(self.server)
        try:
            if self.case.transport == "memory":
                inner = Client(target.server).transport
            elif self.case.transport == "http":
                url = await stack.enter_async_context(http_in_process(target.server))
                inner = Client(url).transport
            else:
                self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed after the failure is explained
                command = serve_command(target.require_spec("stdio"))
                inner = Client(command, transport_options={"env": child_env(), "stderr": self.log}).transport
            tap = Tap(inner, kit.person.take_wrong)
            kit.person.on_hang_up = kit._hang_up(tap)
            client = await stack.enter_async_context(Client(tap, **self.options))
        except BaseException as exc:
            try:
                await stack.aclose()
                self._explain(exc)
            finally:
                self._close_log()
            raise
        self.entry = (client, target.server)
        kit._servers.append(self.entry)
        return client

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        __tracebackhide__ = True
        if self.entry is not None:
            self.kit._servers.remove(self.entry)
        try:
            await self.stack.__aexit__(kind, exc, tb)
        except BaseException as raised:
            self._explain(raised)
            raise
        else:
            if exc is not None:
                self._explain(exc)
                return
        finally:
            self._close_log()
        problems = self.kit.person.unexpected()
        if problems:
            foresaw = "the scripted person was asked what the script did not foresee:\n  "
            raise AssertionError(foresaw + "\n  ".join(problems))

    def _close_log(self) -> None:
        if self.log is not None:
            self.log.close()

    def _explain(self, exc: BaseException) -> None:
        """Notes on a failure: the questions the script did not foresee, and a stdio server's stderr."""
        if not isinstance(exc, Exception):
            return
        for problem in self.kit.person.unexpected():
            exc.add_note(f"elicitkit: {problem}")
        if self.log is not None and not self.log.closed:  # what the stdio server said, for the reader
            self.log.seek(0)
            said = self.log.read().decode(errors="replace").strip()
            if said:
                exc.add_note(f"elicitkit: the stdio server's stderr:\n{said[-3000:]}")


class Kit:
    """What the ``elicitkit`` fixture gives a test.

    ``person`` is the scripted person (``person.will(...)``, ``person.when(...)``), ``asked``
    the questions put to them. ``connect(server)`` yields a :class:`~elicitkit.Client` on
    this test's era and transport; ``call(server, tool, args)`` is connect + one call, and
    ``call_tool(client, tool, args)`` one call on a connected client; on a task case both run
    the call as a task (``tools/call`` answered with a task, its questions read with
    ``tasks/get`` and answered with ``tasks/update``, then its result).
    """

    def __init__(
        self,
        case: Case,
        *,
        snapshot_path: Path | None = None,
        update_snapshots: bool = False,
        snapshot_log: SnapshotLog | None = None,
    ) -> None:
        self.case = case
        self.snapshot_log = snapshot_log
        self.person = Person(era=case.era)
        self.snapshot_path = snapshot_path
        self.update_snapshots = update_snapshots
        self.dropped = False
        self.task_ids: list[str] = []  # the tasks the kit's calls made, in order
        self._children: list[Child] = []
        self._servers: list[tuple[Client, Server]] = []  # the server behind each open connection
        self._set_task_db = case.task and ENV_TASK_DB not in os.environ
        if self._set_task_db:
            # Tasks made by the tests go to a temporary file, not the user's state directory
            # (a server in this process reads it when it opens its store; children inherit it).
            os.environ[ENV_TASK_DB] = session_task_db()

    @property
    def era(self) -> str:
        return self.case.era

    @property
    def transport(self) -> str:
        return self.case.transport

    @property
    def modern(self) -> bool:
        """True on 2026-07-28: no session, questions travel in ``input_required`` rounds."""
        return self.case.era in MODERN_ERAS

    @property
    def task(self) -> bool:
        """True on a task case (``2026-07-28-task``): :meth:`call` and :meth:`call_tool` run as tasks."""
        return self.case.task

    @property
    def asked(self) -> Questions:
        return self.person.asked

    # -- connecting -------------------------------------------------------------------------

    def connect(
        self,
        server: Server | str,
        *,
        elicitation: bool = True,
        modes: tuple[str, ...] = ("form", "url"),
        timeout: float | None = DEFAULT_TIMEOUT,
        era: str | None = None,
        transport: str | None = None,
        **client_options_: Any,
    ) -> _Connection:
        """A client on this test's era and transport, answered by the scripted person
        (``async with elicitkit.connect(server) as client``).

        ``elicitation=False`` connects a client without the elicitation capability;
        ``modes`` are the elicitation modes it declares; ``era`` and ``transport`` override the
        test's for this connection (its questions are recorded with that era). Other keywords
        go to ``Client``. When the block ends, a question the script had no answer for (or an
        answer that did not fit its question) fails the test, reported at the test's own line.
        """
        case = Case(era or self.era, transport or self.transport)
        options: dict[str, Any] = {**client_options(case.era), "timeout": timeout}
        if elicitation:
            options.update(elicitation_callback=functools.partial(self.person, era=case.era), elicitation_modes=modes)
        options.update(client_options_)
        return _Connection(self, case, server, options)

    def _hang_up(self, tap: Tap) -> Any:
        async def hang_up() -> None:
            self.dropped = True
            await tap.hang_up()
            raise ConnectionClosed("the test dropped the connection (hang_up)")

        return hang_up

    async def call(
        self, server: Server | str, tool: str, arguments: dict[str, Any] | None = None, **options: Any
    ) -> CallToolResult:
        """Connect, call ``tool`` once (as a task on a task case), disconnect; the
        :class:`~elicitkit.client.results.CallToolResult`."""
        __tracebackhide__ = True  # a failure reads from the test's line, not the kit's
        async with self.connect(server, **options) as client:
            return await self.call_tool(client, tool, arguments)

    async def call_tool(self, client: Client, tool: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """``client.call_tool(tool, arguments)``; on a task case, as a task, and a tool that gives no
        task fails the test saying why (a plain call on a task case would test nothing new)."""
        __tracebackhide__ = True
        if not (self.task and client.connection.has_tasks):  # connect(era=...) may have left the task era
            return await client.call_tool(tool, arguments)
        started = await client.start_task(tool, arguments)
        if not isinstance(started, TaskHandle):
            raise AssertionError(self._no_task(client, tool))
        self.task_ids.append(started.task_id)
        return CallToolResult.model_validate(await follow_task(client, started.task_id, max_poll=TASK_POLL))

    def _no_task(self, client: Client, tool: str) -> str:
        server = next((s for c, s in self._servers if c is client), None)
        name = repr(server.name) if server is not None else "the server"
        options = server.tasks.options.get(tool) if server is not None else None
        said = f"elicitkit: this case ({self.case.column}) calls {tool!r} as a task, but {name} answered"
        said += " with a plain result"
        if options is None or options.mode == "never":
            return (
                f"{said}: {tool!r} is not task-capable.\n"
                f'  Register it with @server.tool(task="optional") (or task="required") to test it as a task,\n'
                f"  or keep this test out of the task column (drop tasks=True or {self.case.column!r} from its marker)."
            )
        if options.ask_before_task:
            return f"{said}: it has ask_before_task=True and returned before calling ctx.run_as_task()."
        return f"{said}, though it has task={options.mode!r}."

    # -- faults: 2026 rounds ----------------------------------------------------------------

    def _need_modern(self, what: str) -> None:
        __tracebackhide__ = True  # the skip is reported at the test's line
        if self.case.era not in MODERN_ERAS:
            import pytest

            pytest.skip(f"{what} exists on 2026-07-28 only (this case runs {self.era})")

    async def first_round(self, client: Client, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        """Call ``tool`` and stop at its first ``input_required`` round (skips the test before 2026)."""
        __tracebackhide__ = True
        self._need_modern("requestState")
        pending = await client.call_tool(tool, arguments, input_required="return")
        if not hasattr(pending, "request_state"):
            raise AssertionError(f"{tool} finished without asking anything: {pending.text!r}")
        return pending

    async def retry(self, client: Client, pending: Any, *, state: str | None = None) -> Any:
        """Answer ``pending``'s questions through the person and send the retry, with ``state``
        instead of the server's when given (see :func:`tamper`). The result typed as the call's
        own: a :class:`~elicitkit.client.results.CallToolResult` (``.text``) for a tool, as
        :meth:`call` returns, a ``GetPromptResult`` or a ``ReadResourceResult``."""
        __tracebackhide__ = True
        if state is not None:
            pending = pending.model_copy(update={"request_state": state})
        outcome = await client.resume(pending)
        model = _RESULTS.get(pending.method)
        return model.model_validate(outcome) if model is not None and isinstance(outcome, dict) else outcome

    @contextlib.contextmanager
    def short_lived_states(self, server: Server, seconds: int = 1) -> Iterator[None]:
        """States sealed inside the block expire after ``seconds`` (in-process servers only)."""
        if self.transport == "stdio":
            raise RuntimeError("short_lived_states needs the server in this process (memory or http)")
        codec = server.state_codec
        server.state_codec = _ShortLived(codec, seconds)
        try:
            yield
        finally:
            server.state_codec = codec

    async def wait_until_expired(self, seconds: int = 1) -> None:
        """Sleep past a :meth:`short_lived_states` lifetime (whole seconds are stamped)."""
        await anyio.sleep(seconds + 1.1)

    # -- faults: processes ------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def processes(
        self, server: Server | str, count: int = 2, *, shared_keys: bool = True, **options: Any
    ) -> AsyncIterator[list[Client]]:
        """``count`` child processes serving ``server`` over HTTP, one client on each (this era).

        With ``shared_keys`` they all get one ``ELICITKIT_STATE_KEYS``, so a round begun on one
        can be retried on another; without, each has its own key and refuses the others' state.
        """
        spec = resolve(server).require_spec("processes")
        shared = new_state_keys()
        children: list[Child] = [None] * count  # type: ignore[list-item]

        async def start(i: int) -> None:
            # Unbuffered: what a child prints is in process_logs() at once, not when it exits.
            env = child_env({STATE_KEYS_ENV: shared if shared_keys else new_state_keys(), "PYTHONUNBUFFERED": "1"})
            children[i] = await anyio.to_thread.run_sync(start_http_child, spec, env)

        try:
            async with anyio.create_task_group() as tg:
                for i in range(count):
                    tg.start_soon(start, i)
            self._children.extend(children)
            base: dict[str, Any] = {**client_options(self.era), "timeout": DEFAULT_TIMEOUT}
            base.update(elicitation_callback=functools.partial(self.person, era=self.era))
            base.update(options)
            async with AsyncExitStack() as stack:
                yield [await stack.enter_async_context(Client(child.url, **base)) for child in children]
        finally:
            for child in children:
                if child is not None:
                    child.stop()

    def process_logs(self) -> list[str]:
        """What each child process started by :meth:`processes` wrote (for assertions on logs)."""
        return [child.output() for child in self._children]

    # -- snapshots --------------------------------------------------------------------------

    def assert_snapshot(self, name: str | None = None) -> None:
        """The questions asked (message, mode, schema or URL) equal the stored snapshot.

        Stored as JSON beside the test file, in ``__snapshots__/<test file name without .py>/``:
        ``<test name>[<era>].json`` (one file per era; the transports of an era share it), or
        ``<name>[<era>].json`` for a named snapshot (``<name>.json`` in a test without the era
        marker). A missing or outdated snapshot fails with a diff against what was asked;
        ``pytest --elicitkit-update-snapshots`` writes them and lists what it wrote.
        """
        __tracebackhide__ = True
        if self.snapshot_path is None:
            raise RuntimeError("assert_snapshot needs the elicitkit fixture (it knows where the test lives)")
        path = self.snapshot_path
        if name is not None:
            suffix = f"[{self.case.era}]" if self.case.id else ""
            path = path.with_name(f"{name}{suffix}.json")
        asked = [question.snapshot() for question in self.asked]
        if self.snapshot_log is not None:
            self.snapshot_log.seen(path)
        if self.update_snapshots:
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(asked, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            if not path.is_file() or path.read_text() != text:
                path.write_text(text)
                if self.snapshot_log is not None:
                    self.snapshot_log.written.append(path)
            return
        if not path.is_file():
            raise AssertionError(
                f"no snapshot {path.name} (in {path.parent}); the questions asked:\n"
                + schema_diff([], asked, label="questions")
                + f"\n(run pytest {UPDATE_FLAG} to write it)"
            )
        stored = json.loads(path.read_text())
        if stored != asked:
            raise AssertionError(
                f"the questions differ from the snapshot {path.name}:\n"
                + schema_diff(stored, asked, label="questions")
                + f"\n(run pytest {UPDATE_FLAG} if the change is intended)"
            )

    # -- after the test ---------------------------------------------------------------------

    def close(self) -> list[str]:
        """Stop what is left, and say what the script expected that did not happen."""
        for child in self._children:
            child.stop()
            child.log.close()
        self._children.clear()
        if self._set_task_db:
            os.environ.pop(ENV_TASK_DB, None)
            self._set_task_db = False
        return self.person.problems()
