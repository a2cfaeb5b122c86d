"""Sessions over HTTP: each legacy ``Mcp-Session-Id`` is one server session plus its streams,
and a :class:`SessionTable` runs them all in a task group that outlives single requests.

Every 2026-07-28 request goes through one shared stateless session instead (no id, no
standalone stream); its requests get internal ids so two clients' ids cannot collide.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup, TaskStatus

from elicitkit.protocol.inbound import to_client
from elicitkit.protocol.jsonrpc import JSON, RequestId, encode
from elicitkit.runtime.contract import Endpoint, SessionPort
from elicitkit.transports.http.streams import Stream

logger = logging.getLogger("elicitkit.http")

STANDALONE_REPLAY_LIMIT = 1000  # events the standalone stream keeps for resumption
# Stable names for the retention tasks, so a debugger (or a leak test) can find them.
RETIRE_TASK = "elicitkit.http._retire.<locals>.later"
RETIRE_WHEN_DONE_TASK = "elicitkit.http._retire_when_done.<locals>.watch"


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

    def request_unanswered(self, request_id: RequestId) -> None:
        stream = self.streams.get(request_id)
        if stream is not None:
            stream.end_silently()
            if stream.listeners == 0:
                self.drop_stream(stream)

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
        # A copy, not orjson's own buffer: that keeps ~4 KiB of spare capacity, and this payload
        # stays in the stream (replayable) for as long as the request runs.
        payload = bytes(memoryview(encode(message)))
        stream = self.streams.get(related) if related is not None else None
        target = stream if stream is not None and not stream.done else self.standalone
        target.push(payload, False)
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

    def get(self, session_id: str | None) -> HTTPSession | None:
        return self.sessions.get(session_id) if session_id else None

    def pop(self, session_id: str | None) -> HTTPSession | None:
        return self.sessions.pop(session_id, None) if session_id else None

    # -- lifecycle: sessions live in a task group that outlives single requests --------

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Hold the task group the sessions run in (the app's lifespan enters this)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
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
        hs = HTTPSession(secrets.token_urlsafe(24) if register else "")
        hs.session = self.server.create_session(
            hs.route, max_message_bytes=self.max_message_bytes, streams=hs, stateless=stateless
        )
        await tg.start(self._session_main, hs)
        if register:
            self.sessions[hs.session_id] = hs
        return hs

    async def _session_main(self, hs: HTTPSession, *, task_status: TaskStatus[None]) -> None:
        async with hs.session:
            task_status.started()
            await hs.closed.wait()
            hs.session.close("session terminated")
        self.sessions.pop(hs.session_id, None)

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

        async def later() -> None:
            await anyio.sleep(self.retention_seconds)
            hs.drop_stream(stream)

        self._tg.start_soon(later, name=RETIRE_TASK)

    def retire_when_done(self, hs: HTTPSession, stream: Stream) -> None:
        """A stream whose listener left before the end: retire it once its request finishes."""
        if self._tg is None:
            return

        async def watch() -> None:
            while not stream.done:
                await stream.wait()
            if stream.listeners == 0:
                self.retire(hs, stream)

        self._tg.start_soon(watch, name=RETIRE_WHEN_DONE_TASK)
