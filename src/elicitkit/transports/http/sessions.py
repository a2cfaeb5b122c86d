"""Sessions over HTTP: each legacy ``Mcp-Session-Id`` is one server session plus its streams,
and a :class:`SessionTable` runs them all in a task group that outlives single requests.

Every 2026-07-28 request goes through one shared stateless session instead (no id, no
standalone stream); its requests get internal ids so two clients' ids cannot collide.

Legacy sessions are bounded: one left alone for ``idle_timeout`` seconds ends (its id then
gets a 404 that says it expired), and no more than ``max_sessions`` live at once (an
``initialize`` beyond that gets a 503). A session is never idle while one of its requests is
still running (a tool waiting for a person's answer, say) or its GET stream is open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup, TaskStatus

from elicitkit.protocol.inbound import to_client
from elicitkit.protocol.jsonrpc import JSON, RequestId, encode
from elicitkit.runtime.contract import Endpoint, SessionPort
from elicitkit.transports.http.streams import Stream

logger = logging.getLogger("elicitkit.http")

STANDALONE_REPLAY_LIMIT = 1000  # events the standalone stream keeps for resumption
# Messages a 2026 request's stream (subscriptions/listen, a long call) may hold unwritten: its
# client does not read them. Written ones are not kept (no event ids: nothing can resume).
UNREAD_LIMIT = 1000
# Stable names for the retention tasks, so a debugger (or a leak test) can find them.
RETIRE_TASK = "elicitkit.http._retire.<locals>.later"
RETIRE_WHEN_DONE_TASK = "elicitkit.http._retire_when_done.<locals>.watch"
EXPIRE_TASK = "elicitkit.http.SessionTable.expire_idle_sessions"

DEFAULT_SESSION_IDLE_TIMEOUT = 1800.0  # 30 minutes without a request ends a legacy session
DEFAULT_MAX_SESSIONS = 10_000  # live legacy sessions; an initialize beyond that gets a 503
SERVER_BUSY = -32000  # JSON-RPC's implementation-defined server error: no room for another session
_EXPIRED_REMEMBERED = 1024  # expired ids kept to tell "expired" from "unknown" in the 404
_MAX_SWEEP_INTERVAL = 30.0


@dataclass(eq=False)
class HTTPSession:
    """One legacy ``Mcp-Session-Id`` session (or the shared 2026 one): its server session and streams."""

    session_id: str
    session: SessionPort = field(init=False)
    streams: dict[RequestId, Stream] = field(default_factory=dict)
    by_key: dict[str, Stream] = field(default_factory=dict)
    standalone: Stream = field(init=False)
    closed: anyio.Event = field(default_factory=anyio.Event)
    _key_counter: int = 0
    # When a request last named this session (the table's coarse clock; see SessionTable.get).
    last_seen: float = field(default_factory=time.monotonic)
    # Who opened it (the bearer gate's principal); a request with another's token is refused.
    principal: str | None = None

    def __post_init__(self) -> None:
        self.standalone = Stream("g", None)
        self.by_key["g"] = self.standalone

    def open_stream(self, request_id: RequestId) -> Stream:
        self._key_counter += 1
        stream = Stream(f"r{self._key_counter}", request_id)
        self.streams[request_id] = stream
        self.by_key[stream.key] = stream
        return stream

    def drop_stream(self, stream: Stream) -> None:
        if stream.request_id is not None and self.streams.get(stream.request_id) is stream:
            del self.streams[stream.request_id]
        self.by_key.pop(stream.key, None)

    def close_stream(self, request_id: RequestId, retry_ms: int) -> bool:
        """End the live SSE connection of a request; the client resumes it with ``Last-Event-ID``."""
        stream = self.streams.get(request_id)
        if stream is None or stream.done or (stream.listeners == 0 and not stream.answering):
            return False
        stream.detach_retry_ms = retry_ms
        stream.notify()
        return True

    def public_id(self, request_id: RequestId) -> RequestId | None:
        """The client's own id for a request this (stateless) session renumbered, if it did."""
        stream = self.streams.get(request_id)
        return stream.public_id if stream is not None else None

    def request_unanswered(self, request_id: RequestId) -> None:
        stream = self.streams.get(request_id)
        if stream is not None:
            stream.end_silently()
            if stream.listeners == 0:
                self.drop_stream(stream)

    def busy(self) -> bool:
        """Not idle, whatever the clock says: a request still runs (a tool waiting for a person
        counts) or the client holds the GET stream open."""
        return self.standalone.listeners > 0 or any(not stream.done for stream in self.streams.values())

    def next_internal_id(self) -> int:
        self._key_counter += 1
        return self._key_counter

    async def route(self, message: JSON, related: RequestId | None) -> None:
        """The session's send: put each message on the stream it belongs to."""
        if "method" not in message:  # a response or an error: final for its request's stream
            stream = self.streams.get(message.get("id"))  # type: ignore[arg-type]
            if stream is None:
                logger.debug("response for request %r has no open stream; dropped", message.get("id"))
                return
            if stream.public_id is not None:  # 2026: back to the client's id; errors get their status
                message, stream.status = to_client(message, stream.public_id)
            stream.push(encode(message), True)
            return
        encoded = encode(message)  # (a message that cannot be encoded fails its sender here)
        stream = self.streams.get(related) if related is not None else None
        target = stream if stream is not None and not stream.done else self.standalone
        # A question (a request to the client) may wait long for a person: its stream keeps the
        # message, whose params the asking frame holds anyway (see Stream). Anything else: a
        # copy of its JSON, not orjson's own buffer (that has ~4 KiB of spare capacity), since
        # it stays in the stream (replayable) for as long as the request runs.
        kept = message if "id" in message and type(target) is Stream else None
        payload = encoded if kept is not None else bytes(memoryview(encoded))
        if target.public_id is not None and len(target.events) >= UNREAD_LIMIT and target.request_id is not None:
            # 2026 (no event ids: nothing replays) and its client reads none of it: end the
            # request rather than hold every message for a reader that never comes
            logger.warning("a client left %d messages of one stream unread; ending that request", len(target.events))
            target.end_silently()
            self.session.cancel(target.request_id)
            return
        target.push(payload, False, kept)
        if target is self.standalone and len(target.events) > STANDALONE_REPLAY_LIMIT:
            del target.events[0]


class SessionTable:
    """The live sessions of one endpoint, and the task group they run in."""

    def __init__(self, server: Endpoint, *, max_message_bytes: int, retention_seconds: float) -> None:
        self.server = server
        self.max_message_bytes = max_message_bytes
        self.retention_seconds = retention_seconds
        self.sessions: dict[str, HTTPSession] = {}
        self._tg: TaskGroup | None = None
        self._start_lock = anyio.Lock()
        self._stateless: HTTPSession | None = None
        # Limits, set by the endpoint after construction (None: no limit).
        self.idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT
        self.max_sessions: int | None = DEFAULT_MAX_SESSIONS
        # A coarse clock the expiry task advances: stamping a session on each request costs no
        # clock call and no new float.
        self.clock = time.monotonic()
        self._opening = 0
        self._expired: dict[str, None] = {}  # recently expired ids, oldest first
        # A fleet (transports/http/fleet.py) makes its own sessions and registers them.
        self.make_session: Callable[[str], HTTPSession] = HTTPSession
        self.on_open: Callable[[HTTPSession], Awaitable[None]] | None = None
        self.on_end: Callable[[HTTPSession], None] | None = None

    def get(self, session_id: str | None) -> HTTPSession | None:
        hs = self.sessions.get(session_id) if session_id else None
        if hs is not None:
            hs.last_seen = self.clock
        return hs

    def pop(self, session_id: str | None) -> HTTPSession | None:
        return self.sessions.pop(session_id, None) if session_id else None

    # -- lifecycle: sessions live in a task group that outlives single requests --------

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Hold the task group the sessions run in (the app's lifespan enters this)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            if self.idle_timeout is not None:
                tg.start_soon(self._expire_idle_forever, name=EXPIRE_TASK)
            try:
                yield
            finally:
                for hs in list(self.sessions.values()):
                    hs.closed.set()
                self.sessions.clear()
                tg.cancel_scope.cancel()
                self._tg = None

    async def _ensure_running(self) -> TaskGroup:
        """Mounted somewhere that runs no lifespan: start the task group on first use."""
        if self._tg is not None:
            return self._tg
        async with self._start_lock:
            if self._tg is None:
                started = anyio.Event()

                async def hold() -> None:
                    async with self.run():
                        started.set()
                        await anyio.sleep_forever()

                asyncio.get_running_loop().create_task(hold())
                await started.wait()
        assert self._tg is not None
        return self._tg

    async def new_session(self, *, register: bool = True, stateless: bool = False) -> HTTPSession:
        tg = await self._ensure_running()
        hs = self.make_session(secrets.token_urlsafe(24)) if register else HTTPSession("")
        hs.session = self.server.create_session(
            hs.route, max_message_bytes=self.max_message_bytes, streams=hs, stateless=stateless
        )
        await tg.start(self._session_main, hs)
        if register:
            if self.on_open is not None:
                await self.on_open(hs)
            self.sessions[hs.session_id] = hs
        return hs

    async def open_session(self) -> HTTPSession | None:
        """A new registered (legacy) session, or None when ``max_sessions`` are live even after
        the idle ones are expired."""
        if self.max_sessions is not None and len(self.sessions) + self._opening >= self.max_sessions:
            self.expire_idle()
            if len(self.sessions) + self._opening >= self.max_sessions:
                return None
        self._opening += 1  # counted while it starts, so concurrent initializes cannot overshoot
        try:
            return await self.new_session()
        finally:
            self._opening -= 1

    def retry_after(self) -> int:
        """Seconds until an idle session could expire and make room (for ``Retry-After``)."""
        if self.idle_timeout is None:
            return 60
        now, horizon = time.monotonic(), self.idle_timeout + self._sweep_interval()
        waits = [hs.last_seen + horizon - now for hs in self.sessions.values() if not hs.busy()]
        return max(1, math.ceil(min(waits, default=horizon)))

    def missing_reason(self, session_id: str) -> str:
        """The message of the 404 for a session id that is not live: expired, or unknown."""
        if session_id in self._expired and self.idle_timeout is not None:
            return (
                f"session expired after {self.idle_timeout:g} s without a request;"
                " start a new one with initialize (no Mcp-Session-Id)"
            )
        return "unknown or terminated session; start a new one with initialize (no Mcp-Session-Id)"

    # -- expiry ---------------------------------------------------------------------------

    def _sweep_interval(self) -> float:
        assert self.idle_timeout is not None
        return min(max(self.idle_timeout / 8, 0.01), _MAX_SWEEP_INTERVAL)

    async def _expire_idle_forever(self) -> None:
        while True:
            await anyio.sleep(self._sweep_interval())
            self.expire_idle()

    def expire_idle(self) -> int:
        """End every session left alone for longer than ``idle_timeout``; returns how many.

        ``last_seen`` lags the real time of a session's last request by up to one sweep interval
        (the clock is coarse), so a session must look idle for one interval longer than the limit.
        A busy session is stamped now, so a tool that ran for an hour does not leave its session
        to expire the moment it answers.
        """
        self.clock = now = time.monotonic()
        if self.idle_timeout is None:
            return 0
        cutoff = now - self.idle_timeout - self._sweep_interval()
        stale = []
        for hs in self.sessions.values():
            if hs.busy():  # idle time starts when the last request ends, not when it began
                hs.last_seen = now
            elif hs.last_seen < cutoff:
                stale.append(hs)
        for hs in stale:
            del self.sessions[hs.session_id]
            hs.closed.set()
            self._expired[hs.session_id] = None
            if len(self._expired) > _EXPIRED_REMEMBERED:
                del self._expired[next(iter(self._expired))]
        if stale:
            logger.info("expired %d idle session(s)", len(stale))
        return len(stale)

    # -- shutdown -------------------------------------------------------------------------

    def drain(self) -> None:
        """Shutting down: end every open GET stream (nothing is in flight there), so only
        requests still being served hold the server up."""
        for hs in self.sessions.values():
            hs.standalone.end_silently()

    def close_all(self) -> None:
        """Shutting down, grace over: end every session, which cancels what its tools are doing.

        Their requests' streams end here too, not when the tools finish unwinding: a tool that
        swallows its cancellation must not keep a connection (and so the server) open.
        """
        live = list(self.sessions.values())
        if self._stateless is not None:
            live.append(self._stateless)
        for hs in live:
            hs.closed.set()
            for stream in hs.streams.values():
                stream.end_silently()

    async def _session_main(self, hs: HTTPSession, *, task_status: TaskStatus[None]) -> None:
        async with hs.session:
            task_status.started()
            await hs.closed.wait()
            hs.session.close("session terminated")
        for stream in list(hs.streams.values()):  # its calls are over: wake whoever waits on them
            stream.end_silently()
        self.sessions.pop(hs.session_id, None)
        if self.on_end is not None and hs.session_id:
            self.on_end(hs)

    async def stateless_session(self) -> HTTPSession:
        """The one session every 2026 request goes through (ids are remapped per request)."""
        if self._stateless is None:
            async with self._start_lock:
                if self._stateless is None:
                    self._stateless = await self.new_session(register=False, stateless=True)
        return self._stateless

    # -- streams nobody read to the end ---------------------------------------------------

    def retire(self, hs: HTTPSession, stream: Stream) -> None:
        """A finished stream nobody read to the end: keep it a while for resumption, then drop it."""
        if self._tg is None:
            hs.drop_stream(stream)
            return

        ended = hs.closed if isinstance(hs, HTTPSession) else None  # (a fleet's relay has no session here)

        async def later() -> None:
            with anyio.move_on_after(self.retention_seconds):
                if ended is None:
                    await anyio.sleep_forever()
                else:
                    await ended.wait()  # the session ended (DELETE, expiry): nothing can resume it
            hs.drop_stream(stream)

        self._tg.start_soon(later, name=RETIRE_TASK)

    def retire_when_done(self, hs: HTTPSession, stream: Stream) -> None:
        """A stream whose listener left before the end: retire it once its request finishes."""
        if self._tg is None:
            return

        ended = hs.closed if isinstance(hs, HTTPSession) else None

        async def watch() -> None:
            while not stream.done and not (ended is not None and ended.is_set()):
                await stream.wait()
            if stream.listeners == 0:
                self.retire(hs, stream)

        self._tg.start_soon(watch, name=RETIRE_WHEN_DONE_TASK)
