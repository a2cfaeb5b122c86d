"""One backend behind the gateway: a pool of elicitkit :class:`~elicitkit.Client` connections.

A call that may ask (``tools/call``, ``prompts/get``, ``resources/read``) holds a connection
to itself while it runs: a 2025 backend's ``elicitation/create`` carries nothing that says
which of several calls on one connection it belongs to, so one call per connection is what
lets the gateway hand each question to the right host request. Connections are kept open
between calls (one per concurrent call, at most ``max_connections``); one whose server died
is dropped and the next call opens a new one (a stdio backend is restarted that way).

Each connection lives in a task of its own in the gateway's task group (a client's task
groups must be left by the task that entered them), started by :meth:`Backend.lease`.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from elicitkit.client import tasks as client_tasks
from elicitkit.client.client import Client
from elicitkit.client.handlers.policy import AuditLog, Policy, RateLimit
from elicitkit.client.rounds import InputRequiredResult, MultiRoundTripError, drive, result_type
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.errors import AuthError
from elicitkit.gateway.auth import backend_auth
from elicitkit.gateway.config import BackendConfig
from elicitkit.gateway.errors import BackendUnavailable, ConfigError
from elicitkit.protocol.errors import (
    INTERNAL_ERROR,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    URL_ELICITATION_REQUIRED,
    MCPError,
)
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.protocol.modern import ELICIT, LIST_ROOTS, RESULT_INPUT_REQUIRED, SAMPLE
from elicitkit.protocol.tasks import declares_tasks
from elicitkit.protocol.versions import META_SERVER_INFO, Era
from elicitkit.runtime.peer import ProgressCallback

if TYPE_CHECKING:
    from elicitkit.auth.base import AuthProvider
    from elicitkit.gateway.bridge import BackendCall, InlineCall

__all__ = ["Backend", "BackendUnavailable", "Lease"]

logger = logging.getLogger("elicitkit.gateway")

Notify = Callable[["Backend", "Lease", str, JSON], Awaitable[None]]
_ROUND_KEYS = ("resultType", "ttlMs", "cacheScope")


def _needs_a_task(exc: MCPError) -> bool:
    """-32021 asking for the Tasks extension: the tool runs only as a task."""
    data = exc.data if isinstance(exc.data, dict) else {}
    return exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY and declares_tasks(data.get("requiredCapabilities"))


class Lease:
    """One connection to the backend, lent to one call at a time (``call``)."""

    def __init__(self, backend: Backend, principal: str | None = None) -> None:
        self.backend = backend
        self.principal = principal  # whose calls it carries (the front door's principal; None without auth)
        self.call: BackendCall | InlineCall | None = None
        self.stop = anyio.Event()
        self.client: Client = backend.make_client(self)

    @property
    def alive(self) -> bool:
        return not self.stop.is_set() and not self.client.peer.closed


class Backend:
    """A configured backend: its connections, its policy, and what its errors say."""

    def __init__(self, config: BackendConfig, notify: Notify) -> None:
        self.config = config
        self.name = config.name
        self.notify = notify
        self._idle: list[Lease] = []
        self._slots = anyio.Semaphore(config.max_connections)
        self._tg: TaskGroup | None = None
        self.opened = 0  # connections opened so far (a restart is one more)
        self.last_error: str | None = None  # why it was last unreachable (reported by tools/list too)
        self._auth = backend_auth(config.auth, self.name, config.url or "") if config.auth is not None else None
        self.person_auth: Callable[[str | None], AuthProvider] | None = None
        """Each principal's own auth (``connect`` backends: set by the gateway, which holds their tokens)."""
        policy = config.policy
        self._rate = RateLimit(policy.rate_per_minute, policy.burst) if policy.rate_per_minute else None
        self._audit = AuditLog(policy.audit) if policy.audit else None
        if policy.audit:  # find out now, not when the first question's answer would become an error
            try:
                with open(policy.audit, "a", encoding="utf-8"):
                    pass
            except OSError as exc:
                raise ConfigError(
                    f"backend {self.name!r}: policy.audit: cannot write {policy.audit}: {exc.strerror or exc}"
                ) from None

    # -- connections ---------------------------------------------------------------------

    def attach(self, tg: TaskGroup | None) -> None:
        self._tg = tg

    def make_client(self, lease: Lease) -> Client:
        config = self.config
        options: dict[str, Any] = {}
        if config.command is not None:
            if config.env is not None:
                options["env"] = {**os.environ, **config.env}
            if config.cwd is not None:
                options["cwd"] = config.cwd
        elicit: Any = None
        if config.policy.elicitation:
            elicit = Policy(
                lambda request: self._elicit(lease, request),
                rate_limit=self._rate,
                sensitive_fields=config.policy.sensitive_fields,
                audit=self._audit,
            )

        async def sample(params: JSON) -> JSON:
            return await self._ask(lease, SAMPLE, params, None)

        async def roots() -> list[JSON]:
            found = await self._ask(lease, LIST_ROOTS, {}, None)
            listed = found.get("roots") if isinstance(found, dict) else None
            return listed if isinstance(listed, list) else []

        async def notified(method: str, params: JSON) -> None:
            await self.notify(self, lease, method, params)

        return Client(
            config.target,
            mode=config.mode,
            client_info={"name": "elicitkit-gateway", "version": "0.1.0"},
            elicitation_callback=elicit,
            sampling_callback=sample,
            roots=roots,
            notification_callback=notified,
            timeout=config.timeout,
            transport_options=options,
            auth=self._auth if self.person_auth is None else self.person_auth(lease.principal),
        )

    busy_wait = 30.0
    """Seconds a call waits for a free connection when ``max_connections`` are all held (calls
    running, or parked on a 2026 host's answer) before it fails saying so."""

    def lease_now(self, principal: str | None = None) -> Lease | None:
        """An idle connection of ``principal``'s that is still alive, taken without waiting (None:
        :meth:`lease`). The common case of every call, so no checkpoint, timer or cancel scope on the way."""
        idle = self._idle
        if not idle or not idle[-1].alive or idle[-1].principal != principal:
            return None
        try:
            self._slots.acquire_nowait()
        except anyio.WouldBlock:
            return None
        return idle.pop()

    async def lease(self, principal: str | None = None) -> Lease:
        """A connection for one call: an idle one of ``principal``'s that is still alive, or a new one.

        Connections are never shared between principals: whatever a backend keeps per session
        (and a late notice about an earlier call) stays with the person it was for."""
        with anyio.move_on_after(self.busy_wait) as waited:
            await self._slots.acquire()
        if waited.cancelled_caught:
            raise BackendUnavailable(
                INTERNAL_ERROR,
                f"backend {self.name!r}: all {self.config.max_connections} connections are busy (calls running, or"
                " waiting for a host's answer); try again, or raise max_connections",
            )
        try:
            idle = self._idle
            for at in range(len(idle) - 1, -1, -1):
                lease = idle[at]
                if lease.principal != principal:
                    continue
                del idle[at]
                if lease.alive:
                    return lease
                lease.stop.set()
                logger.warning("backend %s: its connection was lost; opening a new one", self.name)
            in_use = self.config.max_connections - self._slots.value  # this call's included
            while idle and len(idle) + in_use > self.config.max_connections:
                idle.pop(0).stop.set()  # another principal's oldest idle connection makes room
            return await self._open(principal)
        except BaseException:
            self._slots.release()
            raise

    def release(self, lease: Lease) -> None:
        lease.call = None
        if lease.alive and self._tg is not None:
            self._idle.append(lease)
        else:
            lease.stop.set()
        self._slots.release()

    async def _open(self, principal: str | None) -> Lease:
        if self._tg is None:
            raise BackendUnavailable(INTERNAL_ERROR, f"backend {self.name!r}: the gateway is not running")
        lease = Lease(self, principal)
        try:
            with anyio.fail_after(self.config.connect_timeout):
                await self._tg.start(self._keep, lease)
        except TimeoutError:
            lease.stop.set()
            self.last_error = f"no answer within {self.config.connect_timeout:g}s"
            raise BackendUnavailable(
                INTERNAL_ERROR,
                f"backend {self.name!r} is unavailable: it did not answer within {self.config.connect_timeout:g}s",
            ) from None
        except MCPError as exc:
            self.last_error = exc.message
            raise BackendUnavailable(INTERNAL_ERROR, f"backend {self.name!r} is unavailable: {exc.message}") from None
        except (OSError, TypeError, AuthError) as exc:  # (an AuthError's text never holds a token)
            self.last_error = str(exc)
            raise BackendUnavailable(INTERNAL_ERROR, f"backend {self.name!r} is unavailable: {exc}") from None
        self.opened += 1
        self.last_error = None
        return lease

    async def _keep(self, lease: Lease, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hold one connection open until it is released for good or the gateway stops."""
        started = False
        try:
            async with lease.client:
                await self._hear_logs(lease.client)
                started = True
                task_status.started()
                await lease.stop.wait()
        except Exception as exc:
            if not started:
                raise
            logger.info("backend %s: a connection ended with %s", self.name, exc)
        finally:
            lease.stop.set()

    async def _hear_logs(self, client: Client) -> None:
        """Every log message the backend has: the gateway filters them by each host's own level."""
        if client.era is not Era.MODERN and not client.server_declares("logging"):
            return  # (2026: the level travels in each request's envelope; no capability says so)
        try:
            await client.set_logging_level("debug")
        except MCPError as exc:
            logger.info("backend %s: logging/setLevel refused (%s); its default level stays", self.name, exc.message)

    async def aclose(self) -> None:
        for lease in self._idle:
            lease.stop.set()
        self._idle.clear()
        self._tg = None

    # -- requests --------------------------------------------------------------------------

    async def request(self, method: str, params: JSON | None = None, principal: str | None = None) -> JSON:
        """A request that never asks (lists, completion): any of ``principal``'s connections, answered at once."""
        lease = self.lease_now(principal) or await self.lease(principal)
        try:
            return self.clean(await lease.client.request(method, params))
        except MCPError as exc:
            raise self.named(exc) from None
        except AuthError as exc:
            raise self.refused(exc) from None
        finally:
            self.release(lease)

    async def call(self, lease: Lease, method: str, params: JSON, on_progress: ProgressCallback | None) -> JSON:
        """``method`` on ``lease``, carried through any 2026 rounds (their questions go to the
        lease's call); -32042 is raised as it came, every other error names the backend."""
        client = lease.client
        try:
            try:
                result = await client.request(method, params, on_progress=on_progress)
            except MCPError as exc:
                if method != "tools/call" or not _needs_a_task(exc):
                    raise
                result = await self._as_task(client, params)
            if result_type(result) == RESULT_INPUT_REQUIRED:

                async def send(method: str, params: JSON) -> JSON:
                    return await client.request(method, params, on_progress=on_progress)

                driven = await drive(
                    send, client.answer_input_requests, method, params, first=result, max_rounds=client.max_input_rounds
                )
                assert not isinstance(driven, InputRequiredResult)  # "handle" answers every round
                result = driven
        except MCPError as exc:
            if exc.code == URL_ELICITATION_REQUIRED:
                raise
            raise self.named(exc) from None
        except MultiRoundTripError as exc:
            raise MCPError(INTERNAL_ERROR, f"backend {self.name!r}: {exc}") from None
        except AuthError as exc:
            raise self.refused(exc) from None
        return self.clean(result)

    async def _as_task(self, client: Client, params: JSON) -> JSON:
        """A tool that runs only as a task (2026 backends): called as one, followed to its end;
        the task's questions reach the client's callbacks, so the host gets them as ordinary
        questions of its own call (it needs no tasks of its own)."""
        name = params.get("name")
        arguments = params.get("arguments")
        started = await client_tasks.start_task(client, str(name), arguments if isinstance(arguments, dict) else None)
        if not isinstance(started, client_tasks.TaskHandle):
            return started
        try:
            return await client_tasks.follow_task(client, started.task_id)
        except BaseException:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):  # the host gave up: so does the task
                await client_tasks.cancel_task(client, started.task_id)
            raise

    def named(self, exc: MCPError) -> MCPError:
        """The backend's error, saying which backend gave it (code and data kept)."""
        if exc.code == URL_ELICITATION_REQUIRED:
            return exc
        if exc.is_local:  # the connection went away, or a timeout of ours
            return BackendUnavailable(exc.code, f"backend {self.name!r}: {exc.message}", exc.data)
        return MCPError(exc.code, f"backend {self.name!r}: {exc.message}", exc.data)

    def refused(self, exc: AuthError) -> BackendUnavailable:
        """The gateway's own OAuth client could not get through to the backend (the text holds no token)."""
        self.last_error = str(exc)
        return BackendUnavailable(INTERNAL_ERROR, f"backend {self.name!r} refused the gateway's credentials: {exc}")

    @staticmethod
    def clean(result: JSON) -> JSON:
        """A backend's result as the gateway's own: no 2026 framing and no backend server info
        (the host's era gets its own framing from the gateway's session). Passed as it came
        (no copy) when there is nothing to take out: a 2025 backend's every result."""
        meta = result.get("_meta")
        if not (isinstance(meta, dict) and META_SERVER_INFO in meta) and not any(k in result for k in _ROUND_KEYS):
            return result
        out = {k: v for k, v in result.items() if k not in _ROUND_KEYS}
        meta = out.get("_meta")
        if isinstance(meta, dict) and META_SERVER_INFO in meta:
            meta = {k: v for k, v in meta.items() if k != META_SERVER_INFO}
            if meta:
                out["_meta"] = meta
            else:
                del out["_meta"]
        return out

    # -- questions from the backend ----------------------------------------------------------

    def _url_refused(self, request: UrlRequest) -> str | None:
        policy = self.config.policy
        domain = request.domain
        if any(fnmatch.fnmatchcase(domain, p) for p in policy.deny_url_domains):
            return f"the gateway does not send people to {domain} for backend {self.name!r}"
        allowed = policy.allow_url_domains
        if allowed is not None and not any(fnmatch.fnmatchcase(domain, p) for p in allowed):
            return f"{domain} is not among the URL domains allowed for backend {self.name!r}"
        return None

    async def _elicit(self, lease: Lease, request: ElicitRequest) -> ElicitationResult[Any] | JSON:
        if isinstance(request, UrlRequest):
            refused = self._url_refused(request)
            if refused is not None:
                logger.warning("declined a URL question: %s", refused)
                return ElicitationResult.decline(refused)
        call = lease.call
        if call is None:  # not during a call: nobody to put it to
            return {"action": "decline"}
        return await call.ask(ELICIT, {}, request)

    async def _ask(self, lease: Lease, method: str, params: JSON, request: ElicitRequest | None) -> JSON:
        call = lease.call
        if call is None:  # not during a call: nobody to put it to
            raise MCPError(INTERNAL_ERROR, f"backend {self.name!r} asked {method} outside any call")
        answer = await call.ask(method, params, request)
        return answer.to_wire() if isinstance(answer, ElicitationResult) else answer
