"""Streamable HTTP, server side: a raw ASGI endpoint, wrapped in a Starlette app for mounting.

One endpoint serves POST (a message in; a JSON or SSE answer out), GET (the standalone SSE
stream, or a resumed request stream with ``Last-Event-ID``) and DELETE (end a session).
Legacy sessions are keyed by ``Mcp-Session-Id``; each is one
:class:`~elicitkit.server.session.ServerSession` whose outgoing messages are routed to the
stream of the request they belong to.

A request whose first outgoing message is its own response is answered as plain JSON; as
soon as anything comes before the response (progress, a log line, an ``elicitation/create``)
the answer becomes an SSE stream, with event ids so a dropped connection can be resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
from anyio.abc import TaskGroup, TaskStatus

from elicitkit.protocol.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    MCPError,
)
from elicitkit.protocol.framing import sse_event
from elicitkit.protocol.jsonrpc import (
    DEFAULT_MAX_MESSAGE_BYTES,
    JSON,
    ErrorResponse,
    InvalidMessage,
    Request,
    RequestId,
    decode,
    encode,
    parse,
)
from elicitkit.protocol.modern import check_headers, has_envelope, read_envelope
from elicitkit.protocol.versions import LEGACY_VERSIONS, MODERN_VERSIONS, SUPPORTED_VERSIONS, sends_priming_events

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from elicitkit.server.lowlevel import LowLevelServer
    from elicitkit.server.session import ServerSession

logger = logging.getLogger("elicitkit.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
ASGISend = Callable[[Message], Awaitable[None]]

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
_QUICK_ANSWER_SECONDS = 0.25
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]
JSON_CT = (b"content-type", b"application/json")


def _hostname(value: str) -> str:
    """Host without the port: ``[::1]:8000`` -> ``[::1]``, ``localhost:80`` -> ``localhost``."""
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


# ----------------------------------------------------------------------------- streams


class _Stream:
    """The outgoing messages of one request (or of the standalone GET stream), replayable.

    Kept small (a parked question holds one for as long as a person takes to answer): the
    events are a list, and waiting is a future per waiter, made only while someone waits.
    """

    __slots__ = (
        "_waiting",
        "answering",
        "delivered",
        "detach_retry_ms",
        "done",
        "events",
        "key",
        "listeners",
        "next_seq",
        "public_id",
        "request_id",
        "status",
    )

    def __init__(self, key: str, request_id: RequestId | None) -> None:
        self.key = key
        self.request_id = request_id
        self.events: list[tuple[int, bytes, bool]] = []  # (seq, json, is_final)
        self.next_seq = 1
        self.done = False
        self.delivered = 0  # highest seq a live listener has written out
        self.listeners = 0
        self.detach_retry_ms: int | None = None  # set: end the live connection, client resumes later
        self.public_id: RequestId | None = None  # 2026: the client's own id (the session uses its own)
        self.status = 200  # 2026: the HTTP status of a JSON answer (errors map to 400/404)
        self.answering = True  # the POST has not yet chosen between a JSON and an SSE answer
        self._waiting: list[asyncio.Future[None]] | None = None

    def push(self, payload: bytes, final: bool) -> None:
        self.events.append((self.next_seq, payload, final))
        self.next_seq += 1
        if final:
            self.done = True
        self.notify()

    def end_silently(self) -> None:
        """The request ended without a response (it was cancelled): nothing more will come."""
        self.done = True
        self.notify()

    def notify(self) -> None:
        """Wake every waiter."""
        waiting, self._waiting = self._waiting, None
        for change in waiting or ():
            if not change.done():
                change.set_result(None)

    async def wait(self, timeout: float | None = None) -> None:
        """Until the next :meth:`notify` (or ``timeout`` seconds): waiters re-check their condition.

        Each waiter has a future of its own, so one being cancelled (its client went away)
        cannot cancel another's wait.
        """
        loop = asyncio.get_running_loop()
        change: asyncio.Future[None] = loop.create_future()
        if self._waiting is None:
            self._waiting = [change]
        else:
            self._waiting.append(change)
        if timeout is None:
            await change
            return
        timer = loop.call_later(timeout, _wake, change)
        try:
            await change
        finally:
            timer.cancel()

    def after(self, seq: int) -> list[tuple[int, bytes, bool]]:
        return [e for e in self.events if e[0] > seq]


def _is_decided(stream: _Stream) -> bool:
    """A POST can choose its answer: a message came, the request ended, or close_stream() was called."""
    return bool(stream.events) or stream.done or stream.detach_retry_ms is not None


async def _decided(stream: _Stream) -> None:
    while not _is_decided(stream):
        await stream.wait()


def _wake(change: asyncio.Future[None]) -> None:
    if not change.done():
        change.set_result(None)


@dataclass(eq=False)
class HTTPSession:
    """One legacy ``Mcp-Session-Id`` session: its server session and its streams."""

    session_id: str
    session: ServerSession = field(init=False)
    streams: dict[RequestId, _Stream] = field(default_factory=dict)
    by_key: dict[str, _Stream] = field(default_factory=dict)
    standalone: _Stream = field(init=False)
    closed: anyio.Event = field(default_factory=anyio.Event)
    _key_counter: int = 0

    def __post_init__(self) -> None:
        self.standalone = _Stream("g", None)
        self.by_key["g"] = self.standalone

    def open_stream(self, request_id: RequestId) -> _Stream:
        self._key_counter += 1
        stream = _Stream(f"r{self._key_counter}", request_id)
        self.streams[request_id] = stream
        self.by_key[stream.key] = stream
        return stream

    def drop_stream(self, stream: _Stream) -> None:
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
                message = {**message, "id": stream.public_id}
                error = message.get("error")
                if isinstance(error, dict):
                    stream.status = _MODERN_ERROR_STATUS.get(error.get("code"), 200)  # type: ignore[arg-type]
            stream.push(encode(message), True)
            return
        # A copy, not orjson's own buffer: that keeps ~4 KiB of spare capacity, and this payload
        # stays in the stream (replayable) for as long as the request runs.
        payload = bytes(memoryview(encode(message)))
        stream = self.streams.get(related) if related is not None else None
        target = stream if stream is not None and not stream.done else self.standalone
        target.push(payload, False)
        if target is self.standalone and len(target.events) > 1000:
            del target.events[0]


# ----------------------------------------------------------------------------- the app


class StreamableHTTPHandler:
    """The raw ASGI endpoint. Mount it with :func:`create_app` or any ASGI router."""

    def __init__(
        self,
        server: LowLevelServer,
        *,
        json_response: bool = True,
        dns_rebinding_protection: bool | None = None,
        allowed_hosts: set[str] | None = None,
        allowed_origins: set[str] | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        retention_seconds: float = 300.0,
    ) -> None:
        self.server = server
        self.json_response = json_response
        self.dns_rebinding_protection = dns_rebinding_protection
        self.allowed_hosts = {h.lower() for h in (allowed_hosts or set())}
        self.allowed_origins = {o.lower().rstrip("/") for o in (allowed_origins or set())}
        self.max_message_bytes = max_message_bytes
        self.retention_seconds = retention_seconds
        self.sessions: dict[str, HTTPSession] = {}
        self._tg: TaskGroup | None = None
        self._runner: contextlib.AbstractAsyncContextManager[None] | None = None
        self._start_lock = anyio.Lock()
        self._stateless: HTTPSession | None = None

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

                import asyncio

                asyncio.get_running_loop().create_task(hold())
                await started.wait()
        assert self._tg is not None
        return self._tg

    async def _new_session(self, *, register: bool = True) -> HTTPSession:
        tg = await self._ensure_running()
        hs = HTTPSession(secrets.token_urlsafe(24) if register else "")
        hs.session = self.server.create_session(hs.route, max_message_bytes=self.max_message_bytes)
        hs.session.transport_hooks = hs
        hs.session.peer.on_unanswered = hs.request_unanswered
        await tg.start(self._session_main, hs)
        if register:
            self.sessions[hs.session_id] = hs
        return hs

    async def _session_main(self, hs: HTTPSession, *, task_status: TaskStatus[None]) -> None:
        async with hs.session.peer:
            task_status.started()
            await hs.closed.wait()
            hs.session.peer.close("session terminated")
        self.sessions.pop(hs.session_id, None)

    def _retire(self, hs: HTTPSession, stream: _Stream) -> None:
        """A finished stream nobody read to the end: keep it a while for resumption, then drop it."""
        if self._tg is None:
            hs.drop_stream(stream)
            return

        async def later() -> None:
            await anyio.sleep(self.retention_seconds)
            hs.drop_stream(stream)

        self._tg.start_soon(later)

    # -- ASGI -----------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: ASGISend) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._check_origin(scope, headers)
        if refusal is not None:
            await _plain(send, refusal[0], refusal[1])
            return
        method = scope["method"]
        if (
            method != "POST"
            and "mcp-session-id" not in headers
            and headers.get("mcp-protocol-version") in MODERN_VERSIONS
        ):
            await _plain(send, 405, "2026-07-28 has no GET stream and no sessions", [(b"allow", b"POST")])
            return
        if method == "POST":
            answer = await self._post(scope, receive, send, headers)
            # Only what the answer needs lives on while it waits (for a person, maybe): not the
            # headers, the body or the decoded message.
            del headers
            if answer is not None:
                hs, stream, modern = answer
                with_ids = await self._answer(hs, stream, receive, send, modern=modern)
                if with_ids is not None:
                    await self._pump(hs, stream, 0, receive, send, with_ids=with_ids)
        elif method == "GET":
            await self._get(receive, send, headers)
        elif method == "DELETE":
            await self._delete(send, headers)
        else:
            await _plain(send, 405, "method not allowed", [(b"allow", b"GET, POST, DELETE")])

    async def _lifespan(self, receive: Receive, send: ASGISend) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with self.run():
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})

    def _protection_on(self, scope: Scope) -> bool:
        if self.dns_rebinding_protection is not None:
            return self.dns_rebinding_protection
        bound = scope.get("server")
        if not bound:
            return False
        return str(bound[0]) in LOOPBACK_HOSTS

    def _check_origin(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """DNS-rebinding defence: Host and Origin must name this machine (or an allowed name)."""
        if not self._protection_on(scope):
            return None
        host = headers.get("host", "").lower()
        if _hostname(host) not in LOOPBACK_HOSTS and host not in self.allowed_hosts:
            return 421, f"host {host!r} is not allowed"
        origin = headers.get("origin")
        if origin is not None:
            origin_l = origin.lower().rstrip("/")
            origin_host = _hostname(urlsplit(origin_l).netloc)
            if origin_host not in LOOPBACK_HOSTS and origin_l not in self.allowed_origins:
                return 403, f"origin {origin!r} is not allowed"
        return None

    # -- POST -----------------------------------------------------------------------

    async def _post(
        self, scope: Scope, receive: Receive, send: ASGISend, headers: dict[str, str]
    ) -> tuple[HTTPSession, _Stream, bool] | None:
        """Check and feed one POST; returns what :meth:`_answer` needs when a response must wait."""
        accept = headers.get("accept", "")
        if not (("application/json" in accept and "text/event-stream" in accept) or "*/*" in accept):
            await _error(send, 406, INVALID_REQUEST, "Accept must list application/json and text/event-stream")
            return None
        if not headers.get("content-type", "").lower().startswith("application/json"):
            await _error(send, 415, INVALID_REQUEST, "Content-Type must be application/json")
            return None
        body = await _read_body(receive, self.max_message_bytes)
        if body is None:
            await _error(send, 413, INVALID_REQUEST, f"message exceeds the {self.max_message_bytes}-byte limit")
            return None
        try:
            obj = decode(body, self.max_message_bytes)
            message = parse(obj)
        except InvalidMessage as exc:
            await _json(send, 400, exc.to_wire())
            return None
        session_id = headers.get("mcp-session-id")
        version = headers.get("mcp-protocol-version")
        if _is_modern(message, version, session_id):  # 2026 has no sessions: a stray Mcp-Session-Id is ignored
            return await self._post_modern(message, obj, headers, send)
        if version is not None and version not in SUPPORTED_VERSIONS:
            await _error(send, 400, INVALID_REQUEST, f"unsupported MCP-Protocol-Version {version!r}", _id(message))
            return None

        request = message if isinstance(message, Request) else None
        if request is not None and request.method == "initialize":
            hs = await self._new_session()
        elif session_id is None:
            await _error(
                send, 400, INVALID_REQUEST, "missing Mcp-Session-Id header; send initialize first", _id(message)
            )
            return None
        else:
            found = self.sessions.get(session_id)
            if found is None:
                await _error(send, 404, INVALID_REQUEST, "unknown or terminated session", _id(message))
                return None
            hs = found

        if request is None:  # notification or response: accepted, nothing to say back
            await hs.session.peer.feed(obj)
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return None

        request_id = request.id
        if request_id in hs.streams:
            err = ErrorResponse(request_id, MCPError(INVALID_REQUEST, f"request id {request_id!r} is already in use"))
            await _json(send, 400, err.to_wire())
            return None
        stream = hs.open_stream(request_id)
        await hs.session.peer.feed(obj)
        return hs, stream, False

    async def _post_modern(
        self, message: Any, obj: JSON, headers: dict[str, str], send: ASGISend
    ) -> tuple[HTTPSession, _Stream, bool] | None:
        """A 2026-07-28 POST: no session; envelope (-32602) and header (-32020) checks come first."""
        if not isinstance(message, Request):
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return None
        try:
            envelope = read_envelope(message.params)
            params = message.params or {}
            name = params.get("name")
            header_params = (
                self.server.tool_header_params(name) if message.method == "tools/call" and isinstance(name, str) else {}
            )
            check_headers(headers, message.method, params, envelope.protocol_version, header_params)
        except MCPError as exc:
            await _json(send, 400, ErrorResponse(message.id, exc).to_wire())
            return None
        hs = await self._stateless_session()
        internal = hs.next_internal_id()
        stream = hs.open_stream(internal)
        stream.public_id = message.id
        await hs.session.peer.feed({**obj, "id": internal})
        return hs, stream, True

    async def _stateless_session(self) -> HTTPSession:
        """The one session every 2026 request goes through (ids are remapped per request)."""
        if self._stateless is None:
            async with self._start_lock:
                if self._stateless is None:
                    hs = await self._new_session(register=False)
                    hs.session.stateless = True
                    self._stateless = hs
        return self._stateless

    async def _answer(
        self, hs: HTTPSession, stream: _Stream, receive: Receive, send: ASGISend, *, modern: bool = False
    ) -> bool | None:
        """Wait for the first outgoing message: the response alone -> JSON, anything else -> SSE.

        Returns None when the answer is complete, or, for an SSE answer whose headers went out,
        whether its events carry ids: the caller then pumps the stream (:meth:`_pump`), so this
        frame is gone while the stream waits (for a person's answer, say).
        """
        if not _is_decided(stream):
            # Most answers come at once: wait a moment without the cost of a disconnect watcher
            # (a task per request), and only then watch for the client leaving.
            loop = asyncio.get_running_loop()
            give_up = loop.time() + _QUICK_ANSWER_SECONDS
            while not _is_decided(stream) and (left := give_up - loop.time()) > 0:
                await stream.wait(left)
        session_headers = [] if modern else [(b"mcp-session-id", hs.session_id.encode())]
        if not _is_decided(stream):
            disconnected = await _wait_or_disconnect(functools.partial(_decided, stream), receive)
            if disconnected:
                stream.answering = False
                stream.detach_retry_ms = None
                if modern and stream.request_id is not None:  # 2026: closing the connection cancels
                    hs.session.peer.cancel_incoming(stream.request_id)
                    hs.drop_stream(stream)
                    return None
                if stream.done:
                    hs.drop_stream(stream)
                else:
                    self._retire_when_done(hs, stream)
                return None
        stream.answering = False
        if not stream.events and stream.done:  # cancelled before it said anything: an empty stream, then done
            hs.drop_stream(stream)
            await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *session_headers]})
            await send({"type": "http.response.body", "body": b""})
            return None
        first = stream.events[0] if stream.events else None  # None: closed early, so SSE with a priming event
        if self.json_response and first is not None and first[2]:
            hs.drop_stream(stream)
            await send(
                {
                    "type": "http.response.start",
                    "status": stream.status,
                    "headers": [JSON_CT, *session_headers, (b"content-length", str(len(first[1])).encode())],
                }
            )
            await send({"type": "http.response.body", "body": first[1]})
            return None
        await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *session_headers]})
        priming = not modern and self._wants_priming(hs)
        if not priming:
            stream.detach_retry_ms = None  # without event ids the client could not resume: keep the stream
        if priming:
            await send(
                {"type": "http.response.body", "body": sse_event(b"", event_id=f"{stream.key}/0"), "more_body": True}
            )
        return priming

    def _wants_priming(self, hs: HTTPSession) -> bool:
        return sends_priming_events(hs.session.protocol_version)

    def _retire_when_done(self, hs: HTTPSession, stream: _Stream) -> None:
        if self._tg is None:
            return

        async def watch() -> None:
            while not stream.done:
                await stream.wait()
            if stream.listeners == 0:
                self._retire(hs, stream)

        self._tg.start_soon(watch)

    async def _pump(
        self, hs: HTTPSession, stream: _Stream, cursor: int, receive: Receive, send: ASGISend, *, with_ids: bool
    ) -> None:
        """Write the stream's events after ``cursor`` as SSE until its final event (or a disconnect).

        One loop in this frame, and one watcher task: a stream parked on a person's answer holds
        both for as long as it waits, so nothing else (no closure, no task group) is kept alive.
        """
        stream.listeners += 1
        finished = False
        watch = _DisconnectWatch(receive)
        try:
            while True:
                if stream.done and cursor >= stream.next_seq - 1:
                    finished = True  # ended without a response (cancelled): close the stream
                    break
                for seq, payload, final in stream.after(cursor):
                    event_id = f"{stream.key}/{seq}" if with_ids else None
                    await send(
                        {"type": "http.response.body", "body": sse_event(payload, event_id=event_id), "more_body": True}
                    )
                    cursor = seq
                    stream.delivered = seq
                    if final:
                        finished = True
                        break
                if finished:
                    break
                if stream.detach_retry_ms is not None:
                    retry = stream.detach_retry_ms
                    stream.detach_retry_ms = None
                    # more_body False: end the response cleanly (an unfinished one reads as an error)
                    await send(
                        {"type": "http.response.body", "body": f"retry: {retry}\n\n".encode(), "more_body": False}
                    )
                    break
                await stream.wait()
        except asyncio.CancelledError:
            if not watch.was_disconnect():
                raise
        finally:
            watch.stop()
            stream.listeners -= 1
        if finished:
            if stream is not hs.standalone:
                hs.drop_stream(stream)
            with contextlib.suppress(Exception):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        elif stream is not hs.standalone:
            self._retire_when_done(hs, stream)

    # -- GET ------------------------------------------------------------------------

    async def _get(self, receive: Receive, send: ASGISend, headers: dict[str, str]) -> None:
        if "text/event-stream" not in headers.get("accept", "") and "*/*" not in headers.get("accept", ""):
            await _error(send, 406, INVALID_REQUEST, "Accept must list text/event-stream")
            return
        hs = self.sessions.get(headers.get("mcp-session-id", ""))
        if hs is None:
            status = 400 if "mcp-session-id" not in headers else 404
            await _error(send, status, INVALID_REQUEST, "missing or unknown Mcp-Session-Id")
            return
        last = headers.get("last-event-id")
        cursor = 0
        stream = hs.standalone
        if last is not None:
            key, _, seq = last.partition("/")
            found = hs.by_key.get(key)
            if found is None or not seq.isdigit():
                await _error(send, 404, INVALID_REQUEST, f"cannot resume from event {last!r}")
                return
            stream, cursor = found, int(seq)
        elif stream.listeners:
            await _error(send, 409, INVALID_REQUEST, "a standalone stream is already open for this session")
            return
        else:
            cursor = stream.next_seq - 1  # a fresh standalone stream starts now
        session_header = (b"mcp-session-id", hs.session_id.encode())
        await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, session_header]})
        await send({"type": "http.response.body", "body": b": stream open\n\n", "more_body": True})
        await self._pump(hs, stream, cursor, receive, send, with_ids=True)

    # -- DELETE ---------------------------------------------------------------------

    async def _delete(self, send: ASGISend, headers: dict[str, str]) -> None:
        session_id = headers.get("mcp-session-id")
        hs = self.sessions.pop(session_id, None) if session_id else None
        if hs is None:
            await _error(send, 404 if session_id else 400, INVALID_REQUEST, "missing or unknown Mcp-Session-Id")
            return
        hs.closed.set()
        await _plain(send, 200, "")


# ----------------------------------------------------------------------------- helpers


_MODERN_ERROR_STATUS = {
    INVALID_PARAMS: 400,
    INVALID_REQUEST: 400,
    PARSE_ERROR: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


def _is_modern(message: Any, version_header: str | None, session_id: str | None) -> bool:
    """2026 if the body carries the envelope or the header names a 2026 version; an unknown
    version header counts as 2026 only without a session (a session is a handshake client's)."""
    if has_envelope(getattr(message, "params", None)) or version_header in MODERN_VERSIONS:
        return True
    return session_id is None and version_header is not None and version_header not in LEGACY_VERSIONS


def _id(message: Any) -> RequestId | None:
    return message.id if type(message) is Request else None


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


class _DisconnectWatch:
    """Watches one request's ``receive()`` for ``http.disconnect`` and then cancels the task that
    made it. One plain asyncio task (named for :func:`_wait_or_disconnect`), nothing more: a
    request parked on a person holds it for minutes. Use as::

        watch = _DisconnectWatch(receive)
        try:
            ...  # wait for things
        except asyncio.CancelledError:
            if not watch.was_disconnect():
                raise
        finally:
            watch.stop()
    """

    __slots__ = ("gone", "runner", "watcher")

    def __init__(self, receive: Receive) -> None:
        runner = asyncio.current_task()
        assert runner is not None
        self.runner = runner
        self.gone = False
        self.watcher = asyncio.get_running_loop().create_task(
            self._watch(receive), name="_wait_or_disconnect.<locals>.watch"
        )

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.gone = True
                self.runner.cancel()
                return

    def was_disconnect(self) -> bool:
        """In an ``except CancelledError``: True (and the cancellation undone) if we caused it."""
        return self.gone and self.runner.uncancel() == 0

    def stop(self) -> None:
        self.watcher.cancel()  # it ends at the loop's next turn; nothing to wait for


async def _wait_or_disconnect(fn: Callable[[], Awaitable[None]], receive: Receive) -> bool:
    """Run ``fn`` until it returns or the client goes away; True if the client went away."""
    watch = _DisconnectWatch(receive)
    try:
        await fn()
    except asyncio.CancelledError:
        if not watch.was_disconnect():
            raise
    finally:
        watch.stop()
    return watch.gone


async def _json(send: ASGISend, status: int, body: JSON, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    data = encode(body)
    headers = [JSON_CT, (b"content-length", str(len(data)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


async def _error(send: ASGISend, status: int, code: int, message: str, request_id: RequestId | None = None) -> None:
    await _json(send, status, ErrorResponse(request_id, MCPError(code, message)).to_wire())


async def _plain(send: ASGISend, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    data = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(data)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def create_app(server: LowLevelServer, *, path: str = "/mcp", **options: Any) -> Starlette:
    """A Starlette app serving ``server`` at ``path``; mount it anywhere, or run it with uvicorn."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    handler = StreamableHTTPHandler(server, **options)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with handler.run():
            yield

    app = Starlette(routes=[Route(path, endpoint=handler, methods=["GET", "POST", "DELETE"])], lifespan=lifespan)
    app.state.mcp_handler = handler
    return app


class _Endpoint:
    """The endpoint alone as an ASGI app: ``path`` goes to the handler, anything else is a 404.

    What :func:`serve_http_background` and :func:`serve_http` run. A request passes through no
    middleware or router on its way in: each of those is a coroutine frame (or several) per
    request, and a request parked on a person holds them for as long as it waits.
    :func:`create_app` is the mountable Starlette app, for everything else.
    """

    def __init__(self, handler: StreamableHTTPHandler, path: str) -> None:
        self.handler = handler
        self.path = path

    def __call__(self, scope: Scope, receive: Receive, send: ASGISend) -> Awaitable[None]:
        # A plain function returning the handler's coroutine: no frame of ours per request.
        kind = scope["type"]
        if kind == "http" and scope["path"] != self.path:
            return _plain(send, 404, "Not Found")
        if kind in ("http", "lifespan"):
            return self.handler(scope, receive, send)
        return _nothing()


async def _nothing() -> None:
    return None


def _serving_app(server: LowLevelServer, path: str, options: dict[str, Any]) -> _Endpoint:
    return _Endpoint(StreamableHTTPHandler(server, **options), path)


class HTTPServerHandle:
    """A running uvicorn server: its URL, and how to stop it."""

    def __init__(self, server: Any, url: str) -> None:
        self._server = server
        self.url = url

    def stop(self) -> None:
        self._server.should_exit = True


@contextlib.asynccontextmanager
async def serve_http_background(
    server: LowLevelServer, *, host: str = "127.0.0.1", port: int = 0, path: str = "/mcp", **options: Any
) -> AsyncIterator[HTTPServerHandle]:
    """Run uvicorn in this event loop for the duration of the block (port 0: pick a free one)."""
    import uvicorn

    app = _serving_app(server, path, options)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", access_log=False, interface="asgi3"
    )
    userver = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(userver.serve)
        while not userver.started:  # noqa: ASYNC110 - uvicorn offers no started event
            await anyio.sleep(0.01)
        sock_port = userver.servers[0].sockets[0].getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        handle = HTTPServerHandle(userver, f"http://{shown}:{sock_port}{path}")
        try:
            yield handle
        finally:
            userver.should_exit = True


async def serve_http(
    server: LowLevelServer, *, host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp", **options: Any
) -> None:
    """Serve until SIGINT or SIGTERM, then shut down gracefully and return (exit status 0)."""
    import signal

    import uvicorn

    class _Uvicorn(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # signals are ours: uvicorn would re-raise them after shutting down

    app = _serving_app(server, path, options)
    userver = _Uvicorn(uvicorn.Config(app, host=host, port=port, log_level="info", lifespan="on", interface="asgi3"))
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    userver.should_exit = True
                    return

        tg.start_soon(stop_on_signal)
        await userver.serve()
        tg.cancel_scope.cancel()
