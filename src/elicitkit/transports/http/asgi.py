"""Streamable HTTP, server side: the raw ASGI endpoint.

One endpoint serves POST (a message in; a JSON or SSE answer out), GET (the standalone SSE
stream, or a resumed request stream with ``Last-Event-ID``) and DELETE (end a session).
Legacy sessions are keyed by ``Mcp-Session-Id`` (:mod:`.sessions`); each request's outgoing
messages go to its own :class:`~.streams.Stream`.

A request whose first outgoing message is its own response is answered as plain JSON; as
soon as anything comes before the response (progress, a log line, an ``elicitation/create``)
the answer becomes an SSE stream, with event ids so a dropped connection can be resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeAlias

from elicitkit.protocol.errors import INVALID_REQUEST, MCPError
from elicitkit.protocol.framing import sse_event
from elicitkit.protocol.handshake import INITIALIZE
from elicitkit.protocol.inbound import (
    SESSION_HEADER,
    Handshake,
    Rejected,
    Stateless,
    classify_other,
    classify_request,
    refuses_streams,
)
from elicitkit.protocol.jsonrpc import (
    DEFAULT_MAX_MESSAGE_BYTES,
    JSON,
    ErrorResponse,
    InvalidMessage,
    Message,
    Notification,
    Request,
    RequestId,
    decode,
    parse,
)
from elicitkit.protocol.versions import sends_priming_events
from elicitkit.runtime.contract import Endpoint
from elicitkit.transports.http.responses import (
    DISCONNECT_HOOK,
    JSON_CT,
    SSE_HEADERS,
    ASGISend,
    Receive,
    Scope,
    send_accepted,
    send_error,
    send_json,
    send_plain,
)
from elicitkit.transports.http.security import (
    OriginGuard,
    accepts_event_stream,
    authenticated_identity,
    check_post_content,
    read_headers,
)
from elicitkit.transports.http.sessions import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    SERVER_BUSY,
    HTTPSession,
    SessionTable,
)
from elicitkit.transports.http.streams import Stream, decided, is_decided, parse_event_id

if TYPE_CHECKING:
    from elicitkit.backplane.base import Backplane
    from elicitkit.transports.http.fleet import Fleet

_QUICK_ANSWER_SECONDS = 0.25
# Loop turns a POSTed answer's 202 waits (see _post_other): enough for the request it settles to
# write what comes of it (a tool's next event, a gateway's forward to its backend: two or three).
_ANSWER_HEAD_START = 3
# What a request's stream is pumped with: session (or a fleet relay), stream, cursor, whether
# events carry ids, the disconnect hook, and whether the stream is a relayed copy.
_Pumped: TypeAlias = "tuple[HTTPSession, Stream, int, bool, LostHook | None, bool]"

FOREIGN_SESSION = "this session belongs to another principal; start your own with initialize"


class StreamableHTTPHandler:
    """The raw ASGI endpoint. Mount it with :func:`create_app` or any ASGI router."""

    def __init__(
        self,
        server: Endpoint,
        *,
        json_response: bool = True,
        dns_rebinding_protection: bool | None = None,
        allowed_hosts: set[str] | None = None,
        allowed_origins: set[str] | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        retention_seconds: float = 300.0,
        session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
        max_sessions: int | None = DEFAULT_MAX_SESSIONS,
        backplane: Backplane | None = None,
    ) -> None:
        """``backplane``: what a fleet of instances shares (see ``docs/fleet.md``); None or an
        in-process one: a single process, and no fleet code runs on a request's path."""
        self.server = server
        self.json_response = json_response
        self.guard = OriginGuard(dns_rebinding_protection, allowed_hosts, allowed_origins)
        self.max_message_bytes = max_message_bytes
        self.table = SessionTable(server, max_message_bytes=max_message_bytes, retention_seconds=retention_seconds)
        self.table.idle_timeout = session_idle_timeout
        self.table.max_sessions = max_sessions
        self.backplane = backplane
        # Set only when instances share sessions: every fleet path starts with ``if self.fleet``.
        self.fleet: Fleet | None = None
        if backplane is not None:
            from elicitkit.transports.http.fleet import Fleet

            fleet = Fleet(backplane, self.table)
            self.fleet = fleet if backplane.shared else None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Hold the task group the sessions run in, and the backplane (the app's lifespan enters this)."""
        async with self.table.run():
            if self.backplane is None:
                yield
                return
            await self.backplane.start()
            try:
                yield
            finally:
                await self.backplane.stop()

    # -- ASGI -----------------------------------------------------------------------

    def __call__(self, scope: Scope, receive: Receive, send: ASGISend) -> Awaitable[None]:
        # A plain function handing back one coroutine: a request whose stream waits for a person
        # holds that one frame (its stream pumped in it, :meth:`_http`), no frame of ours above it.
        kind = scope["type"]
        if kind == "http":
            return self._http(scope, receive, send)
        if kind == "lifespan":
            return self._lifespan(receive, send)
        return _nothing()

    async def _begin(self, scope: Scope, receive: Receive, send: ASGISend) -> _Pumped | None:
        """Everything a request does before its stream is pumped: None when it is answered, else
        what :meth:`_http` pumps (this frame is gone while the stream waits)."""
        headers = read_headers(scope["headers"])
        refusal = self.guard.check(scope, headers)
        if refusal is not None:
            await send_plain(send, refusal[0], refusal[1])
            return None
        method = scope["method"]
        who = authenticated_identity(scope)
        if method != "POST" and refuses_streams(headers):
            await send_plain(send, 405, "2026-07-28 has no GET stream and no sessions", [(b"allow", b"POST")])
            return None
        if method == "POST":
            answer = await self._post(who, receive, send, headers)
            # Only what the answer needs lives on while it waits (for a person, maybe): not the
            # headers, the body or the decoded message.
            del headers
            if answer is None:
                return None
            scope["headers"] = ()  # read above; what a parked question would keep otherwise
            hs, stream, modern = answer
            hook = scope.get(DISCONNECT_HOOK)
            with_ids = await self._answer(hs, stream, receive, send, modern=modern, hook=hook, scope=scope)
            if with_ids is None:
                return None
            _forget_request(scope)
            if hook is not None:
                hook.request_waits()
            return hs, stream, 0, with_ids, hook, False
        if method == "GET":
            return await self._get(who, receive, send, headers, scope.get(DISCONNECT_HOOK))
        if method == "DELETE":
            await self._delete(who, send, headers)
        else:
            await send_plain(send, 405, "method not allowed", [(b"allow", b"GET, POST, DELETE")])
        return None

    async def _lifespan(self, receive: Receive, send: ASGISend) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with self.run():
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})

    # -- POST -----------------------------------------------------------------------

    async def _post(
        self, who: str | None, receive: Receive, send: ASGISend, headers: dict[str, str]
    ) -> tuple[HTTPSession, Stream, bool] | None:
        """Check and feed one POST; returns what :meth:`_answer` needs when a response must wait."""
        refusal = check_post_content(headers)
        if refusal is not None:
            await send_error(send, refusal[0], INVALID_REQUEST, refusal[1])
            return None
        body = await _read_body(receive, self.max_message_bytes)
        if body is None:
            await send_error(send, 413, INVALID_REQUEST, f"message exceeds the {self.max_message_bytes}-byte limit")
            return None
        try:
            obj = decode(body, self.max_message_bytes)
            message = parse(obj)
        except InvalidMessage as exc:
            await send_json(send, 400, exc.to_wire())
            return None
        if type(message) is not Request:  # a notification or a response: accepted, nothing to say back
            await self._post_other(who, message, obj, headers, send)
            return None
        inbound = classify_request(
            message.method,
            message.params,
            headers=headers,
            header_params=self.server.tool_header_params,
            principal=who,
        )
        if type(inbound) is Rejected:
            await send_json(send, inbound.status, ErrorResponse(message.id, inbound.error).to_wire())
            return None
        if type(inbound) is Stateless:  # 2026 has no sessions: a stray Mcp-Session-Id is ignored
            hs = await self.table.stateless_session()
            internal = hs.next_internal_id()
            stream = hs.open_stream(internal)
            stream.public_id = message.id
            await hs.session.feed({**obj, "id": internal}, inbound)
            return hs, stream, True

        if message.method == INITIALIZE:
            opened = await self.table.open_session()
            if opened is None:
                retry = (b"retry-after", str(self.table.retry_after()).encode())
                busy = ErrorResponse(message.id, MCPError(SERVER_BUSY, "too many sessions; try again later"))
                await send_json(send, 503, busy.to_wire(), [retry])
                return None
            hs = opened
            hs.principal = hs.session.principal = who
        else:
            found = self.table.get(headers.get(SESSION_HEADER))
            if found is None:
                session_id = headers.get(SESSION_HEADER) or ""
                if self.fleet is not None and session_id:  # held by another instance, maybe
                    return await self._relay_request(send, session_id, headers, obj, message.id, who)
                await send_error(send, 404, INVALID_REQUEST, self.table.missing_reason(session_id), message.id)
                return None
            if found.principal != who:
                await send_error(send, 403, INVALID_REQUEST, FOREIGN_SESSION, message.id)
                return None
            hs = found
        request_id = message.id
        if request_id in hs.streams:
            err = ErrorResponse(request_id, MCPError(INVALID_REQUEST, f"request id {request_id!r} is already in use"))
            await send_json(send, 400, err.to_wire())
            return None
        stream = hs.open_stream(request_id)
        await hs.session.feed(obj, inbound)
        return hs, stream, False

    async def _relay_request(
        self,
        send: ASGISend,
        session_id: str,
        headers: dict[str, str],
        obj: JSON,
        request_id: RequestId,
        who: str | None,
    ) -> tuple[HTTPSession, Stream, bool] | None:
        """A request for a session another instance owns: relay it (with its principal), answer from its events."""
        assert self.fleet is not None
        version = headers.get("mcp-protocol-version")
        relayed = await self.fleet.forward_request(session_id, version, obj, request_id, who)
        if type(relayed) is int:
            await self._relay_refused(send, relayed, session_id, request_id)
            return None
        relay, stream = relayed  # type: ignore[misc]
        return relay, stream, False  # type: ignore[return-value]  # a RemoteSession answers like one

    async def _relay_refused(
        self, send: ASGISend, status: int, session_id: str, request_id: RequestId | None = None
    ) -> None:
        if status == 404:
            await send_error(send, 404, INVALID_REQUEST, self.table.missing_reason(session_id), request_id)
        elif status == 403:
            await send_error(send, 403, INVALID_REQUEST, FOREIGN_SESSION, request_id)
        else:
            await send_error(send, status, INVALID_REQUEST, "the fleet cannot reach this session now; try again")

    async def _post_other(
        self, who: str | None, message: Message, obj: JSON, headers: dict[str, str], send: ASGISend
    ) -> None:
        """A notification or response: to its handshake session, or (2026) accepted and dropped."""
        inbound = classify_other(getattr(message, "params", None), headers)
        if type(inbound) is Rejected:
            await send_json(send, inbound.status, ErrorResponse(None, inbound.error).to_wire())
            return
        if type(inbound) is Handshake:
            session_id = headers.get(SESSION_HEADER) or ""
            hs = self.table.get(session_id)
            if hs is None:
                if self.fleet is not None and session_id:
                    status = await self.fleet.forward_other(session_id, obj, who)
                    if status != 202:
                        await self._relay_refused(send, status, session_id)
                        return
                    await send_accepted(send)
                    return
                await send_error(send, 404, INVALID_REQUEST, self.table.missing_reason(session_id))
                return
            if hs.principal != who:  # an answer or a cancel for someone else's session
                await send_error(send, 403, INVALID_REQUEST, FOREIGN_SESSION)
                return
            await hs.session.feed(obj)
            if type(message) is not Notification:
                # An answer to the server's question: the request waiting on it goes first (its
                # next event, a gateway's forward), the 202 after. Written first, the 202 wakes
                # the client (a segment, the client's turn on a core) while that work still waits.
                for _ in range(_ANSWER_HEAD_START):
                    await asyncio.sleep(0)
        await send_accepted(send)

    async def _no_session(self, send: ASGISend, session_id: str | None) -> None:
        """A GET or DELETE without a live session: 400 when none was named, else 404 saying why."""
        if not session_id:
            await send_error(send, 400, INVALID_REQUEST, "missing Mcp-Session-Id")
        else:
            await send_error(send, 404, INVALID_REQUEST, self.table.missing_reason(session_id))

    async def _answer(
        self,
        hs: HTTPSession,
        stream: Stream,
        receive: Receive,
        send: ASGISend,
        *,
        modern: bool = False,
        hook: LostHook | None = None,
        scope: Scope | None = None,
    ) -> bool | None:
        """Wait for the first outgoing message: the response alone -> JSON, anything else -> SSE.

        Returns None when the answer is complete, or, for an SSE answer whose headers went out,
        whether its events carry ids: the caller then pumps the stream (:meth:`_pump`), so this
        frame is gone while the stream waits (for a person's answer, say). What it writes is
        gathered (``hook``): the caller flushes it with the first events.
        """
        if not is_decided(stream):
            # Most answers come at once: wait a moment without the cost of a disconnect watcher
            # (a task per request), and only then watch for the client leaving.
            loop = asyncio.get_running_loop()
            give_up = loop.time() + _QUICK_ANSWER_SECONDS
            while not is_decided(stream) and (left := give_up - loop.time()) > 0:
                await stream.wait(left)
        session_headers = [] if modern else [(b"mcp-session-id", hs.session_id.encode())]
        if not is_decided(stream):
            disconnected = await _wait_or_disconnect(functools.partial(decided, stream), receive, hook)
            if disconnected:
                stream.answering = False
                stream.detach_retry_ms = None
                if modern and stream.request_id is not None:  # 2026: closing the connection cancels
                    hs.session.cancel(stream.request_id)
                    hs.drop_stream(stream)
                    return None
                if stream.done:
                    hs.drop_stream(stream)
                else:
                    self.table.retire_when_done(hs, stream)
                return None
        stream.answering = False
        if hook is not None and scope is not None:
            hook.gather(scope)  # the head, the priming event and the first events: one write
        if not stream.events and stream.done:  # cancelled before it said anything: an empty stream, then done
            hs.drop_stream(stream)
            await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *session_headers]})
            await send({"type": "http.response.body", "body": b""})
            return None
        first = stream.events[0] if stream.events else None  # None: closed early, so SSE with a priming event
        # (a relayed request the owner refused answers with the owner's status, as JSON)
        if first is not None and first[2] and (self.json_response or (stream.status != 200 and not modern)):
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

    async def _http(self, scope: Scope, receive: Receive, send: ASGISend) -> None:
        """One HTTP request: :meth:`_begin`, then (an SSE answer, a GET stream) the stream's events
        after its cursor until its final event (or a disconnect), in this same frame.

        One loop in this frame, and a disconnect watch (no task under our own uvicorn protocol,
        see :class:`_DisconnectWatch`): a stream parked on a person's answer holds both for as
        long as it waits, so nothing else (no closure, no task group, no frame) is kept alive.
        """
        gathers = scope.get(DISCONNECT_HOOK)  # (our uvicorn protocol: see _answer)
        try:
            pumped = await self._begin(scope, receive, send)
        except BaseException:
            if gathers is not None:
                gathers.flush()
            raise
        if pumped is None:
            if gathers is not None:
                gathers.flush()
            return
        del gathers  # an SSE answer's head goes with its first events (below)
        hs, stream, cursor, with_ids, hook, relayed = pumped
        del pumped  # (the tuple would live as long as the stream waits)
        try:
            stream.listeners += 1
            finished = gone = False
            watch = _DisconnectWatch(receive, hook)
            del receive  # (the watch has what it needs: a bound method less while the stream waits)
            try:
                while True:
                    if stream.done and cursor >= stream.next_seq - 1:
                        finished = True  # ended without a response (cancelled): close the stream
                        break
                    if hook is not None:  # each batch of events (the last with the terminator): one write
                        hook.gather(scope)
                    for seq, payload, final in stream.after(cursor):
                        await send(
                            {
                                "type": "http.response.body",
                                "body": sse_event(payload, event_id=f"{stream.key}/{seq}" if with_ids else None),
                                "more_body": True,
                            }
                        )
                        cursor = seq
                        stream.delivered = seq
                        if final:
                            finished = True
                            break
                    if finished:
                        break
                    if not with_ids and stream.public_id is not None and stream.events:
                        # 2026: written is gone for good (no ids, no resumption): keep none of it
                        del stream.events[: max(0, cursor - stream.events[0][0] + 1)]
                    if stream.detach_retry_ms is not None:
                        retry = stream.detach_retry_ms
                        stream.detach_retry_ms = None
                        # more_body False: end the response cleanly (an unfinished one reads as an error)
                        await send(
                            {"type": "http.response.body", "body": f"retry: {retry}\n\n".encode(), "more_body": False}
                        )
                        break
                    if hook is not None:
                        hook.flush()
                    payload = b""  # (the last one written may be a question encoded afresh: not kept while waiting)
                    await stream.changed()
            except asyncio.CancelledError:
                if not watch.was_disconnect():
                    raise
                gone = True
            finally:
                watch.stop()
                stream.listeners -= 1
            if finished:
                if stream is not hs.standalone:
                    hs.drop_stream(stream)
                with contextlib.suppress(Exception):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
            elif gone and stream.public_id is not None and stream.request_id is not None:
                # 2026: closing the connection cancels (as in _answer); a listen stream ends this way
                hs.session.cancel(stream.request_id)
                hs.drop_stream(stream)
            elif stream is not hs.standalone:
                self.table.retire_when_done(hs, stream)
        finally:
            if hook is not None:
                hook.flush()  # the last events and the end of the response
            if relayed:  # a relayed GET's copy of the stream: nobody reads it any more
                hs.drop_stream(stream)
                stream.end_silently()  # (a retire watcher may wait on it)

    # -- GET ------------------------------------------------------------------------

    async def _get(
        self, who: str | None, receive: Receive, send: ASGISend, headers: dict[str, str], hook: LostHook | None
    ) -> _Pumped | None:
        """A GET stream (standalone, or resumed from an event id): what :meth:`_http` pumps."""
        if not accepts_event_stream(headers):
            await send_error(send, 406, INVALID_REQUEST, "Accept must list text/event-stream")
            return None
        session_id = headers.get("mcp-session-id")
        hs = self.table.get(session_id)
        if hs is None:
            if self.fleet is not None and session_id:
                return await self._relay_get(send, session_id, headers, who, hook)
            await self._no_session(send, session_id)
            return None
        if hs.principal != who:
            await send_error(send, 403, INVALID_REQUEST, FOREIGN_SESSION)
            return None
        last = headers.get("last-event-id")
        cursor = 0
        stream = hs.standalone
        if last is not None:
            event = parse_event_id(last)  # malformed or unknown alike: no event of ours, so 404
            found = hs.by_key.get(event[0]) if event is not None else None
            if found is None and event is not None and self.fleet is not None:
                # a stream another instance relayed, over now: its events are recorded in the fleet
                found = await self.fleet.recorded(hs.session_id, *event)
            if event is None or found is None:
                await send_error(send, 404, INVALID_REQUEST, f"cannot resume from event {last[:80]!r}")
                return None
            stream, cursor = found, event[1]
        elif stream.listeners:
            await send_error(send, 409, INVALID_REQUEST, "a standalone stream is already open for this session")
            return None
        else:
            cursor = stream.next_seq - 1  # a fresh standalone stream starts now
        session_header = (b"mcp-session-id", hs.session_id.encode())
        await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, session_header]})
        await send({"type": "http.response.body", "body": b": stream open\n\n", "more_body": True})
        return hs, stream, cursor, True, hook, False

    async def _relay_get(
        self,
        send: ASGISend,
        session_id: str,
        headers: dict[str, str],
        who: str | None,
        hook: LostHook | None,
    ) -> _Pumped | None:
        """A GET for a session another instance owns: its recorded events, then the live ones
        (pumped by :meth:`_http`, which drops the relayed copy of the stream when it ends)."""
        assert self.fleet is not None
        last = headers.get("last-event-id")
        event = parse_event_id(last) if last is not None else None
        if last is not None and event is None:
            await send_error(send, 404, INVALID_REQUEST, f"cannot resume from event {last[:80]!r}")
            return None
        key, cursor = event if event is not None else ("g", None)
        opened = await self.fleet.open_stream(session_id, headers.get("mcp-protocol-version"), key, cursor, who)
        if type(opened) is int:
            if opened == 404 and last is not None:
                await send_error(send, 404, INVALID_REQUEST, f"cannot resume from event {last[:80]!r}")
            else:
                await self._relay_refused(send, opened, session_id)
            return None
        relay, stream = opened  # type: ignore[misc]
        session_header = (b"mcp-session-id", session_id.encode())
        try:
            await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, session_header]})
            await send({"type": "http.response.body", "body": b": stream open\n\n", "more_body": True})
        except BaseException:
            relay.drop_stream(stream)
            stream.end_silently()  # nobody reads this copy (a retire watcher may wait on it)
            raise
        start = stream.next_seq - 1 if cursor is None else cursor
        return relay, stream, start, True, hook, True  # type: ignore[return-value]  # a RemoteSession streams like one

    # -- DELETE ---------------------------------------------------------------------

    async def _delete(self, who: str | None, send: ASGISend, headers: dict[str, str]) -> None:
        session_id = headers.get("mcp-session-id")
        found = self.table.get(session_id)
        if found is not None and found.principal != who:
            await send_error(send, 403, INVALID_REQUEST, FOREIGN_SESSION)
            return
        hs = self.table.pop(session_id)
        if hs is None:
            if self.fleet is not None and session_id:
                status = await self.fleet.forward_delete(session_id, who)
                if status == 200:
                    await send_plain(send, 200, "")
                else:
                    await self._relay_refused(send, status, session_id)
                return
            await self._no_session(send, session_id)
            return
        hs.closed.set()
        await send_plain(send, 200, "")


# ----------------------------------------------------------------------------- helpers


async def _nothing() -> None:
    return None


def _forget_request(scope: Scope) -> None:
    """An SSE answer has started (its request may now wait for a person): keep only what the
    server reads per message it writes (uvicorn reads ``method``), not the path, the client's
    address, the scope's table or its state, for as long as the stream stays open."""
    method = scope.get("method")
    if method == "POST":
        method = "POST"  # the one constant, not the copy uvicorn decoded for this request
    scope.clear()
    scope["type"] = "http"
    scope["method"] = method


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


class LostHook(Protocol):
    """What our uvicorn protocol puts in the scope under :data:`DISCONNECT_HOOK`."""

    def watch_lost(self, watch: _DisconnectWatch | None) -> None: ...

    def request_waits(self) -> None:
        """The request's answer is a stream that may wait long: the connection lets go of
        what it needs only to read a next request."""

    def gather(self, scope: Scope) -> None:
        """Hold what the response to ``scope`` writes until :meth:`flush`."""

    def flush(self) -> None:
        """Write what was held, at once (a segment and a wake-up of the client, not one per part)."""


class _DisconnectWatch:
    """Notices the client going away and then cancels the task that made it. Use as::

        watch = _DisconnectWatch(receive, hook)
        try:
            ...  # wait for things
        except asyncio.CancelledError:
            if not watch.was_disconnect():
                raise
        finally:
            watch.stop()

    Under our own uvicorn protocol (``hook``, from the scope) the connection tells it directly;
    under any other server, one plain asyncio task (named for :func:`_wait_or_disconnect`)
    watches ``receive()`` for ``http.disconnect``. A request parked on a person holds this for
    minutes: the hook makes that one object instead of a task, its coroutines and a future.
    """

    __slots__ = ("gone", "hook", "runner", "watcher")

    def __init__(self, receive: Receive, hook: LostHook | None = None) -> None:
        runner = asyncio.current_task()
        assert runner is not None
        self.runner = runner
        self.gone = False
        self.hook = hook
        if hook is not None:
            self.watcher: asyncio.Task[None] | None = None
            hook.watch_lost(self)
        else:
            self.watcher = asyncio.get_running_loop().create_task(
                self._watch(receive), name="_wait_or_disconnect.<locals>.watch"
            )

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.lost()
                return

    def lost(self) -> None:
        """The client went away: cancel the waiting task (once)."""
        if not self.gone:
            self.gone = True
            self.runner.cancel()

    def was_disconnect(self) -> bool:
        """In an ``except CancelledError``: True (and the cancellation undone) if we caused it."""
        return self.gone and self.runner.uncancel() == 0

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.cancel()  # it ends at the loop's next turn; nothing to wait for
        elif self.hook is not None:
            self.hook.watch_lost(None)


async def _wait_or_disconnect(
    fn: Callable[[], Awaitable[None]], receive: Receive, hook: LostHook | None = None
) -> bool:
    """Run ``fn`` until it returns or the client goes away; True if the client went away."""
    watch = _DisconnectWatch(receive, hook)
    try:
        await fn()
    except asyncio.CancelledError:
        if not watch.was_disconnect():
            raise
    finally:
        watch.stop()
    return watch.gone
