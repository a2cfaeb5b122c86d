"""The async runtime around the sans-I/O :class:`~elicitkit.protocol.connection.Connection`.

A :class:`Peer` is one end of a JSON-RPC conversation, shared by client and server: it feeds
arriving data to the core, runs each incoming request as its own task (cancellable by the
peer), parks outgoing requests until their answer comes, and hands every outgoing message to a
transport-supplied ``send`` callable together with the id of the request it belongs to, so
an HTTP transport can put it on the right stream. It never touches bytes on a wire itself.

Costs per request are kept to the minimum, because a server may hold thousands of requests
open while people answer questions: an incoming request is one plain asyncio task (no task
group or cancel scope of its own; cancelling it cancels the task), and an outgoing request
waits on one future, with its timeout an entry in a few shared timers
(:mod:`~elicitkit.runtime.deadlines`) rather than a cancel scope or a timer of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any

import anyio
from anyio.abc import TaskGroup

from elicitkit.protocol.connection import (
    CancelReceived,
    Connection,
    Dropped,
    ErrorReceived,
    NotificationReceived,
    ProgressReceived,
    RequestReceived,
    ResponseReceived,
    Role,
    SendReply,
)
from elicitkit.protocol.errors import INTERNAL_ERROR, ConnectionClosed, MCPError, RequestTimeout
from elicitkit.protocol.inbound import Inbound
from elicitkit.protocol.jsonrpc import DEFAULT_MAX_MESSAGE_BYTES, JSON, Notification, Request, RequestId
from elicitkit.runtime.contract import Incoming
from elicitkit.runtime.contract import Send as Send  # re-exported: what callers knew as elicitkit.peer.Send
from elicitkit.runtime.deadlines import Deadlines
from elicitkit.telemetry import hook as telemetry

logger = logging.getLogger("elicitkit.peer")

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]


# Method names as constants: the name a request arrived with is a fresh string, which a call
# waiting on a person would otherwise keep for as long as it waits.
_METHODS = {
    name: name
    for name in (
        "tools/call",
        "tools/list",
        "prompts/get",
        "prompts/list",
        "resources/read",
        "resources/list",
        "resources/templates/list",
        "completion/complete",
        "elicitation/create",
        "sampling/createMessage",
        "roots/list",
        "ping",
        "initialize",
    )
}


class IncomingRequest:
    """A request from the other side, as seen by the handler that serves it."""

    __slots__ = ("id", "inbound", "method", "params", "peer")

    def __init__(self, peer: Peer, request: Request, inbound: Inbound | None = None) -> None:
        self.peer = peer
        self.id = request.id
        self.method = _METHODS.get(request.method, request.method)  # (a parked call keeps no copy of its name)
        self.params: dict[str, Any] = request.params if request.params is not None else {}
        # How the transport classified the request, when it did (HTTP); None: not yet.
        self.inbound = inbound

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def progress_token(self) -> str | int | None:
        token = self.meta.get("progressToken")
        return token if isinstance(token, (str, int)) and not isinstance(token, bool) else None

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """A notification tied to this request (HTTP puts it on this request's stream)."""
        await self.peer.notify(method, params, related=self.id)

    async def request(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None) -> JSON:
        """A request back to the other side, on behalf of this request."""
        return await self.peer.request(method, params, timeout=timeout, related=self.id)

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        token = self.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)


RequestHandler = Callable[[IncomingRequest], Awaitable[JSON]]
NotificationHandler = Callable[[Notification], Awaitable[None]]


class _Expired(Exception):
    """Set on a waiter's future when its deadline passes (never leaves :meth:`Peer.request`)."""


class _Waiter:
    """One outgoing request waiting for its answer: a future, and the deadline bookkeeping."""

    __slots__ = ("due", "future", "limit", "paused_before", "progress", "sending", "task", "timed_out")

    def __init__(self, future: asyncio.Future[JSON], progress: ProgressCallback | None) -> None:
        self.future = future
        self.progress = progress
        self.due: float | None = None  # the slot of its deadline in Peer._deadlines (None: no deadline)
        self.limit = 0.0
        self.paused_before = 0.0
        self.task: asyncio.Task[Any] | None = None  # the requesting task, while it is still sending
        self.sending = False
        self.timed_out = False  # the deadline cancelled the task mid-send


async def _ignore_notification(_: Notification) -> None:
    return None


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a finished future's exception as seen (nobody will await it now)."""
    if future.done() and not future.cancelled():
        future.exception()


class Peer:
    """One end of a JSON-RPC connection. Use as ``async with Peer(...) as peer:``."""

    def __init__(
        self,
        role: Role,
        send: Send,
        *,
        on_request: RequestHandler,
        on_notification: NotificationHandler = _ignore_notification,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        default_timeout: float | None = None,
    ) -> None:
        self.conn = Connection(role, max_message_bytes=max_message_bytes)
        self._send = send
        self._on_request = on_request
        self._on_notification = on_notification
        self.default_timeout = default_timeout
        self._waiters: dict[RequestId, _Waiter] = {}
        self._handlers: dict[RequestId, asyncio.Task[None]] = {}
        self._cancel_at_start: set[RequestId] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tg: TaskGroup | None = None
        self._closed = False
        self._rejected = 0  # invalid messages from the peer: the first is shown, the rest only counted
        # Transports that keep per-request state (HTTP streams) learn of requests ending silently.
        self.on_unanswered: Callable[[RequestId], None] | None = None
        self._pause_depth = 0
        self._pause_started = 0.0
        self._pause_total = 0.0
        self._deadlines_on_hold: list[_Waiter] = []  # deadlines that passed while paused
        # Outgoing requests' timeouts: a few shared timers, not one per request (see deadlines.py).
        self._deadlines = Deadlines(self._deadline)
        self._role = "server" if role is Role.SERVER else "client"
        # What every request this side sends is known by (telemetry: protocol version, session id).
        self.span_attributes: dict[str, Any] | None = None
        self._opened_at = 0.0

    async def __aenter__(self) -> Peer:
        self._opened_at = time.monotonic()
        self._loop = asyncio.get_running_loop()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        self.close()
        tel = telemetry.current
        if tel is not None:  # mcp.{client,server}.session.duration
            tel.session_closed(
                self._role, time.monotonic() - self._opened_at, exc[1] if isinstance(exc[1], Exception) else None
            )
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        try:
            if self._handlers:  # cancelled by close(); wait for them as a task group would
                with anyio.CancelScope(shield=True):
                    await asyncio.wait(list(self._handlers.values()))
        finally:
            outcome = await self._tg.__aexit__(*exc)  # type: ignore[arg-type]
        return outcome

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, detail: str = "connection closed") -> None:
        """The transport is gone: fail every waiting request, stop every running handler."""
        if self._closed:
            return
        self._closed = True
        self._deadlines.clear()  # every waiter fails below: no timer keeps this peer alive
        for request_id in self.conn.fail_all():
            waiter = self._waiters.pop(request_id, None)
            if waiter is not None and not waiter.future.done():
                waiter.future.set_exception(ConnectionClosed(detail))
        for request_id in list(self._handlers):
            self._cancel_handler(request_id)

    def cancel_incoming(self, request_id: RequestId) -> None:
        """Cancel a request we are serving as if the peer had sent ``notifications/cancelled``."""
        if self.conn.mark_cancelled(request_id):
            self._cancel_handler(request_id)

    def _cancel_handler(self, request_id: RequestId) -> None:
        """Cancel the task serving ``request_id``. One that has not started yet is cancelled as it
        starts, so the handler still runs up to its first wait (cancelling a task before its first
        step would skip the handler, and its cleanup, entirely)."""
        task = self._handlers.get(request_id)
        if task is None:
            return
        coro = task.get_coro()
        if coro is not None and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:  # type: ignore[arg-type]
            self._cancel_at_start.add(request_id)
        else:
            task.cancel()

    # ------------------------------------------------------------------ incoming

    async def feed(self, data: Incoming, inbound: Inbound | None = None) -> None:
        """Everything a transport receives goes through here: bytes, or an already decoded value.

        ``inbound``: the transport already classified this one request (HTTP); handed on with it.
        """
        events = self.conn.receive_data(data) if isinstance(data, (bytes, str)) else self.conn.receive(data)
        for event in events:
            match event:
                case ResponseReceived(request_id=request_id, result=result):
                    self._settle(request_id, result, None)
                case RequestReceived(request=request):
                    self._start_handler(request, inbound)
                case NotificationReceived(notification=notification):
                    await self._notification(notification)
                case ErrorReceived(request_id=request_id, error=error):
                    self._settle(request_id, None, error)
                case CancelReceived(request_id=request_id):
                    self._cancel_handler(request_id)
                case ProgressReceived():
                    await self._progress(event)
                case SendReply(message=message):
                    self._log_rejected(message["error"]["message"], data)
                    await self._send(message, None)
                case Dropped(reason=reason):
                    logger.info("dropped: %s", reason)

    def _log_rejected(self, reason: str, data: Incoming) -> None:
        """Say once what the peer sent that is not JSON-RPC, with its first line (a stdio server
        that prints a banner would otherwise fill the log with the same parse error, never
        showing the text); later ones go to the debug log."""
        self._rejected += 1
        if self._rejected > 1:
            logger.debug("rejected invalid message #%d: %s", self._rejected, reason)
            return
        said = ""
        if isinstance(data, (bytes, str)):
            text = data.decode(errors="replace") if isinstance(data, bytes) else data
            lines = text.strip().splitlines()
            first = lines[0] if lines else ""
            if first:
                said = f"; it began {first[:120]!r}{'...' if len(first) > 120 else ''}"
        logger.warning(
            "rejected invalid message: %s%s (a peer that prints other text on a JSON-RPC stream, such as a"
            " server's banner on stdout; further ones are logged at debug level only)",
            reason,
            said,
        )

    def _settle(self, request_id: RequestId, result: JSON | None, error: MCPError | None) -> None:
        waiter = self._waiters.pop(request_id, None)
        if waiter is None or waiter.future.done():  # pragma: no cover - the core only settles what we started
            return
        if error is not None:
            waiter.future.set_exception(error)
        else:
            waiter.future.set_result(result if result is not None else {})

    async def _notification(self, notification: Notification) -> None:
        try:
            await self._on_notification(notification)
        except Exception:
            logger.exception("notification handler for %s failed", notification.method)

    async def _progress(self, event: ProgressReceived) -> None:
        waiter = self._waiters.get(event.request_id)
        if waiter is None or waiter.progress is None:
            return
        try:
            outcome = waiter.progress(event.progress, event.total, event.message)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            logger.exception("progress callback failed")

    def _start_handler(self, request: Request, inbound: Inbound | None) -> None:
        if self._loop is None or self._closed:
            return
        incoming = IncomingRequest(self, request, inbound)
        task = self._loop.create_task(self._run_handler(incoming), name="elicitkit-request")
        self._handlers[request.id] = task

    async def _run_handler(self, request: IncomingRequest) -> None:
        reply: JSON | None = None
        if self._cancel_at_start and request.id in self._cancel_at_start:
            self._cancel_at_start.discard(request.id)
            asyncio.current_task().cancel()  # type: ignore[union-attr]  # delivered at its first wait
        try:
            try:
                tel = telemetry.current  # off: this one read is all a request pays for telemetry
                result = await (self._on_request(request) if tel is None else tel.serve(request, self._on_request))
            except MCPError as exc:
                answered = None if self._closed else self.conn.respond_error(request.id, exc)
                reply = answered.to_wire() if answered is not None else None
            except Exception as exc:
                logger.exception("handler for %s failed", request.method)
                error = MCPError(INTERNAL_ERROR, f"internal error: {exc}")
                answered = None if self._closed else self.conn.respond_error(request.id, error)
                reply = answered.to_wire() if answered is not None else None
            else:
                # Closed while the handler finished (close() forgot every running request):
                # the answer has nowhere to go.
                response = None if self._closed else self.conn.respond(request.id, result)
                reply = response.to_wire() if response is not None else None
        except asyncio.CancelledError:
            reply = None  # cancelled (by the peer, a transport, or shutdown): the peer expects no answer
        try:
            if reply is None:
                self.conn.discard(request.id)
                if self.on_unanswered is not None:
                    self.on_unanswered(request.id)
            elif not self._closed:
                try:
                    await self._send(reply, request.id)
                except Exception:  # the transport is gone; the reader side will notice and close
                    logger.info("could not deliver the answer to %s %r", request.method, request.id)
        finally:
            if self._handlers.get(request.id) is asyncio.current_task():
                del self._handlers[request.id]

    # ------------------------------------------------------------------ outgoing

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        related: RequestId | None = None,
        on_progress: ProgressCallback | None = None,
        on_started: Callable[[RequestId], object] | None = None,
    ) -> JSON:
        """Send a request and wait for its result; raises :class:`MCPError` on an error reply.

        ``on_started`` hears the request's id before it is sent (a stream whose notifications
        name it, such as ``subscriptions/listen``, is told them apart by it)."""
        if self._closed:
            raise ConnectionClosed()
        tel = telemetry.current  # off: this one read (and the local checks below) is all it costs
        if tel is not None:  # a CLIENT span; its context goes out in params._meta
            span, params, started = tel.client_start(method, params, self.span_attributes)
        try:
            loop = self._loop if self._loop is not None else asyncio.get_running_loop()
            request = self.conn.start_request(method, params, on_progress is not None)
            request_id = request.id
            if on_started is not None:
                on_started(request_id)
            if tel is not None:
                tel.client_started(span, request_id)
            waiter = _Waiter(loop.create_future(), on_progress)
            self._waiters[request_id] = waiter
            limit = self.default_timeout if timeout is None else timeout
            if limit is not None and limit > 0:
                waiter.limit = limit
                waiter.paused_before = self._paused_time() if self._pause_depth else self._pause_total
                self._deadlines.add(waiter, limit, loop)
            try:
                waiter.sending = True
                waiter.task = asyncio.current_task()
                try:
                    await self._send(request.to_wire(), related)
                finally:
                    waiter.sending = False
                    waiter.task = None
                result = await waiter.future
                if tel is not None:
                    tel.client_end(span, started, None, result)
                return result
            except _Expired:
                await self._abandon(request_id, "timeout", related)
                raise RequestTimeout(method, waiter.limit) from None
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if waiter.timed_out and task is not None and task.uncancel() == 0:
                    await self._abandon(request_id, "timeout", related)  # our deadline interrupted the send
                    raise RequestTimeout(method, waiter.limit) from None
                with anyio.CancelScope(shield=True):
                    await self._abandon(request_id, "cancelled", related)
                raise
            except BaseException:
                if not waiter.future.done():  # the send failed: stop waiting (an error answer needs nothing)
                    with anyio.CancelScope(shield=True):
                        await self._abandon(request_id, "cancelled", related)
                raise
            finally:
                if waiter.due is not None:
                    self._deadlines.remove(waiter)
                # An exception nobody awaited (the connection failing every waiter mid-send) is
                # marked seen; a future that gave its result back needs nothing.
                future = waiter.future
                if future.done() and not future.cancelled():
                    future.exception()
        except BaseException as exc:
            if tel is not None:
                tel.client_end(span, started, exc)
            raise

    def _deadline(self, waiter: _Waiter) -> None:
        """The deadline of an outgoing request passed: extend it by time spent paused, or expire it."""
        if waiter.future.done():
            return
        if self._pause_depth:  # a person is answering: decide once they are done
            self._deadlines_on_hold.append(waiter)
            return
        credit = self._paused_time() - waiter.paused_before
        if credit > 0:
            waiter.paused_before += credit
            assert self._loop is not None
            self._deadlines.add(waiter, credit, self._loop)
            return
        if waiter.sending and waiter.task is not None:
            waiter.timed_out = True
            waiter.task.cancel()
        else:
            waiter.future.set_exception(_Expired())

    # -- pausing timeouts while a person answers ------------------------------------------

    @contextlib.contextmanager
    def timeouts_paused(self) -> Iterator[None]:
        """Outgoing requests' timeouts stand still inside this block.

        A client answering a server's question (a person typing into a form) must not have the
        very call that asked time out underneath it; the paused time is added to every deadline.
        """
        if self._pause_depth == 0:
            self._pause_started = time.monotonic()
        self._pause_depth += 1
        try:
            yield
        finally:
            self._pause_depth -= 1
            if self._pause_depth == 0:
                self._pause_total += time.monotonic() - self._pause_started
                held, self._deadlines_on_hold = self._deadlines_on_hold, []
                for waiter in held:
                    self._deadline(waiter)

    def _paused_time(self) -> float:
        if not self._pause_depth:
            return self._pause_total  # (the same float object: a waiter keeps no float of its own)
        return self._pause_total + time.monotonic() - self._pause_started

    async def _abandon(self, request_id: RequestId, reason: str, related: RequestId | None) -> None:
        """Stop waiting; tell the other side, where the request went (HTTP: the asking call's stream)."""
        self._waiters.pop(request_id, None)
        cancel = self.conn.abandon_request(request_id, reason)
        if cancel is not None and not self._closed:
            try:
                await self._send(cancel.to_wire(), related)
            except Exception:  # the transport may already be gone
                logger.debug("could not send cancellation for %r", request_id)

    async def notify(
        self, method: str, params: dict[str, Any] | None = None, *, related: RequestId | None = None
    ) -> None:
        if self._closed:
            raise ConnectionClosed()
        await self._send(Notification(method, params).to_wire(), related)

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run a background task for as long as this peer lives."""
        if self._tg is None:
            raise RuntimeError("peer is not running")
        self._tg.start_soon(fn, *args)
