"""Streamable HTTP, client side (aiohttp, chosen by measurement: see docs/decisions/http-client.md).

Each outgoing message is one POST. ``send`` returns once the response headers are in; the body
(one JSON message, or an SSE stream of them) is read in the background and fed to the peer.
An SSE stream that ends before its request's response is resumed with GET + ``Last-Event-ID``
after the server's ``retry`` delay. A standalone GET stream carries messages the server sends
outside any request, when the server offers one.

Stateless servers (2026-07-28) get none of that: no session id, no GET stream, no DELETE, no
resumption; the client hands each message its own headers instead (``send(..., headers=...)``).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

import aiohttp
import anyio
import orjson
from anyio.abc import TaskGroup

from elicitkit.protocol.connection import CANCELLED
from elicitkit.protocol.errors import CONNECTION_CLOSED, MCPError
from elicitkit.protocol.framing import SSEParser
from elicitkit.protocol.jsonrpc import DEFAULT_MAX_MESSAGE_BYTES, JSON, ErrorResponse, RequestId, encode
from elicitkit.runtime.contract import Send
from elicitkit.transports.base import Feed, OnClose
from elicitkit.transports.http.auth import CHALLENGE_STATUSES, MAX_AUTH_RETRIES, HTTPAuth

logger = logging.getLogger("elicitkit.http.client")


class _Sent:
    """Whether a request went out on a connection the pool had used before (set by :class:`_Pool`)."""

    __slots__ = ("reused",)

    def __init__(self) -> None:
        self.reused = False


_sending: ContextVar[_Sent | None] = ContextVar("elicitkit_http_sending", default=None)


class _Pool(aiohttp.TCPConnector):
    """aiohttp's connector, telling the request being sent (through a context variable) when the
    connection it hands out has carried a request before. ``connect`` is the connector's documented
    entry point; a trace config says the same but costs every request 8-11% of the client's
    instructions (callgrind, S0 over HTTP), this a set lookup."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._elicitkit_used: weakref.WeakSet[Any] = weakref.WeakSet()

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        connection = await super().connect(req, traces, timeout)
        protocol = connection.protocol
        if protocol is not None:
            if protocol in self._elicitkit_used:
                sent = _sending.get()
                if sent is not None:
                    sent.reused = True
            else:
                self._elicitkit_used.add(protocol)
        return connection


ACCEPT = "application/json, text/event-stream"
DEFAULT_RETRY_MS = 1000
MAX_RESUME_ATTEMPTS = 5
STREAM_END_GRACE = 2.0  # seconds a response stream may stay open after its response (then closed)
# Seconds an idle connection stays in the pool. Servers close idle kept-alive connections after
# about 5 s (uvicorn, node); a request written on one as its close is in flight fails with a
# reset, so the client lets them go first (aiohttp's own default, 15 s, outlives them).
IDLE_REUSE_SECONDS = 4.0
# Responses and notifications (answered 202 at once) share at most this many POSTs at a time, so
# thousands of questions answered together reuse a few kept-alive connections instead of
# opening one socket each next to the thousands of response streams still open.
MAX_CONCURRENT_ANSWERS = 64
ANSWER_ATTEMPTS = 3
# An answer (a response to the server's question) refused with one of these statuses is posted
# again for this long, backing off: a fleet refuses it while its shared store (Redis) restarts
# (503), or for a moment after (404 until the session is registered again). Past that, the call
# the question belongs to fails with the refusal: it would otherwise wait for a result that the
# server, never having the answer, cannot send.
ANSWER_RETRY_STATUSES = frozenset({404, 502, 503, 504})
ANSWER_RETRY_SECONDS = 8.0
_ASKED_REMEMBERED = 4096  # questions whose call is remembered (a bounded map, cleared when full)
# ``data`` key of the local error for a request refused because its session is gone.
SESSION_EXPIRED = "sessionExpired"


_NO_AUTH: Mapping[str, str] = MappingProxyType({})  # the auth headers sent without an auth hook: none


class StreamableHTTPTransport:
    """Talk to an MCP server at ``url`` over Streamable HTTP."""

    per_message_headers = True  # send() takes headers for that one message

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        connect_timeout: float = 30.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        standalone_stream: bool = True,
        terminate_on_close: bool = True,
        max_connections: int = 0,
        auth: HTTPAuth | None = None,
    ) -> None:
        self.url = url
        self.auth = auth  # adds Authorization/DPoP headers, answers 401/403 (transports/http/auth.py)
        self.extra_headers = dict(headers or {})
        self.connect_timeout = connect_timeout
        self.max_message_bytes = max_message_bytes
        self.standalone_stream = standalone_stream
        self.terminate_on_close = terminate_on_close
        # 0: no limit. Every call that is waiting on a person holds its SSE response (one
        # connection) open, and the answer to its question needs a connection of its own: a
        # pool limit would stall every call past it, and with enough parked questions, the
        # answers too.
        self.max_connections = max_connections
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._http: aiohttp.ClientSession | None = None
        self._tg: TaskGroup | None = None
        self._feed: Feed | None = None
        self._listening = False
        self.sessions = True  # stateless (set_stateless): no Mcp-Session-Id, nothing to resume
        self._answers: anyio.Semaphore | None = None
        self._asked_in: dict[RequestId, RequestId] = {}  # the server's question -> the call it came on
        # Stateless (2026): a request is cancelled by closing its response stream, not by a
        # notification. The streams being read, and cancelled requests whose stream had not come yet.
        self._reading: dict[RequestId, anyio.CancelScope] = {}
        self._dropped: set[RequestId] = set()

    def set_stateless(self, stateless: bool) -> None:
        """Stateless: forget and ignore session ids, open no GET stream, resume nothing, DELETE nothing."""
        self.sessions = not stateless
        if stateless:
            self.session_id = None
            self.protocol_version = None

    def describe(self) -> str:
        return self.url

    def set_protocol_version(self, version: str) -> None:
        self.protocol_version = version

    async def start_listening(self) -> None:
        """Open the standalone GET stream and return once the server has answered it.

        Servers may send requests and notifications that belong to no client request (pings,
        list changes, resource updates) only there. A 405 means the server has none.
        """
        if not self.sessions or not self.standalone_stream or self.session_id is None:
            return
        if self._tg is None or self._listening:
            return
        self._listening = True
        resp = await self._get(None)
        if resp is not None:
            self._tg.start_soon(self._standalone, resp)

    def _headers(self) -> dict[str, str]:
        # identity: we read bodies raw (auto_decompress off); a compressing server must not gzip them.
        headers = {
            "Accept": ACCEPT,
            "Accept-Encoding": "identity",
            "Content-Type": "application/json",
            **self.extra_headers,
        }
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    @asynccontextmanager
    async def open(self, feed: Feed, on_close: OnClose) -> AsyncIterator[Send]:
        connector = _Pool(
            limit=self.max_connections,
            force_close=False,
            enable_cleanup_closed=True,
            keepalive_timeout=IDLE_REUSE_SECONDS,
        )
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.connect_timeout)
        self._feed = feed
        async with aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False) as http:
            self._http = http
            try:
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    try:
                        yield self._send
                    finally:
                        tg.cancel_scope.cancel()
            finally:
                self._tg = None
                with anyio.CancelScope(shield=True):
                    await self._terminate()
                self._http = None
                on_close("transport closed")

    async def _terminate(self) -> None:
        if not self.terminate_on_close or self.session_id is None or self._http is None:
            return
        try:
            with anyio.move_on_after(2):
                headers, _ = await self._authorized("DELETE", self._headers())
                async with self._http.delete(self.url, headers=headers) as resp:
                    await resp.read()
        except aiohttp.ClientError:
            pass

    # -- sending --------------------------------------------------------------------

    async def _send(self, message: JSON, related: RequestId | None, headers: dict[str, str] | None = None) -> None:
        assert self._http is not None and self._tg is not None
        request_id = message.get("id") if "method" in message else None
        merged = self._headers()
        if headers:
            merged.update(headers)
        if request_id is None:
            if not self.sessions and message.get("method") == CANCELLED:
                self._close_stream(message.get("params"))
                return
            await self._send_answer(message, merged)
            return
        sent_session = merged.get("Mcp-Session-Id")
        data = encode(message)
        for attempt in range(MAX_AUTH_RETRIES + 1):
            # Without an auth hook there is nothing to await (a coroutine per POST saved).
            headers, sent = (merged, _NO_AUTH) if self.auth is None else await self._authorized("POST", merged)
            try:
                resp = await self._post(data, headers)
            except aiohttp.ClientError as exc:
                await self._lost(request_id, self._unreachable(exc))
                return
            if attempt == MAX_AUTH_RETRIES or not await self._challenged(resp, sent):
                break
            # The flow may have taken long (a person signing in): this connection may be idle past
            # the server's keep-alive by the time of the retry, so it is not reused (and a pooled
            # one that died meanwhile is sent again by _post).
            resp.close()
        if self.sessions and self.session_id is None and "mcp-session-id" in resp.headers:
            self.session_id = resp.headers["mcp-session-id"]
        ctype = resp.headers.get("content-type", "")
        if ctype.startswith("text/event-stream") and resp.status < 400:
            self._tg.start_soon(self._read_sse, resp, request_id)
            return
        body = await resp.read()
        resp.release()
        if resp.status == 404 and sent_session is not None and self.sessions:
            await self._session_gone(request_id, sent_session)
            return
        if ctype.startswith("application/json") and body:
            try:
                answer = orjson.loads(body)
            except orjson.JSONDecodeError:
                pass
            else:
                if resp.status in CHALLENGE_STATUSES and not (isinstance(answer, dict) and "jsonrpc" in answer):
                    await self._lost(request_id, self._refused(resp.status))
                    return
                if isinstance(answer, dict) and "error" in answer and answer.get("id") is None:
                    # An error about this POST that could not name its request (the server failed
                    # before reading the id): it is this request's answer, not a stray.
                    answer = {**answer, "id": request_id}
                feed = self._feed  # not _deliver: a coroutine frame less on every answer
                assert feed is not None
                await feed(answer)
                return
        if resp.status in CHALLENGE_STATUSES:
            await self._lost(request_id, self._refused(resp.status))
            return
        said = f"HTTP {resp.status} without a JSON-RPC answer: {body[:200]!r}"
        if resp.status in (404, 405):
            said += f"; is {self.url} the MCP endpoint? It is usually at the path /mcp"
        await self._lost(request_id, said)

    def _close_stream(self, params: Any) -> None:
        """A 2026 request was cancelled: close its response stream, which is how the server hears it
        (there is no ``notifications/cancelled`` over 2026 HTTP). A stream not open yet is closed
        as soon as it comes."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if request_id is None:
            return
        reading = self._reading.pop(request_id, None)
        if reading is not None:
            reading.cancel()
            return
        if len(self._dropped) >= _ASKED_REMEMBERED:
            self._dropped.clear()
        self._dropped.add(request_id)

    async def _post(self, data: bytes, headers: dict[str, str]) -> aiohttp.ClientResponse:
        """POST once more if a kept-alive connection turns out dead before any answer came.

        A server closes an idle connection when it likes (uvicorn and node after 5 s); a request
        written on one as the close is in flight fails at once with a reset or a disconnect, and the
        server never read it. Only a *reused* connection is tried again (the rule browsers follow):
        a new connection that fails has reached a server that may have read the request.
        """
        assert self._http is not None
        sent = _Sent()
        token = _sending.set(sent)
        try:
            return await self._http.post(self.url, data=data, headers=headers)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            if not sent.reused:
                raise
            logger.info("a kept-alive connection was closed under a request; sending it on a new one")
            return await self._http.post(self.url, data=data, headers=headers)
        finally:
            _sending.reset(token)

    async def _authorized(self, method: str, headers: dict[str, str]) -> tuple[dict[str, str], Mapping[str, str]]:
        """``headers`` plus the auth hook's for this request, and the hook's alone (shown back on a challenge)."""
        if self.auth is None:
            return headers, {}
        extra = await self.auth.headers(method, self.url)
        return {**headers, **extra}, extra

    async def _challenged(self, resp: aiohttp.ClientResponse, sent: Mapping[str, str]) -> bool:
        """A 401/403 the auth hook can answer (new token, nonce, scopes): read it, True to send again."""
        if self.auth is None or resp.status not in CHALLENGE_STATUSES:
            return False
        await resp.read()  # kept: the caller reads the body again if there is no retry
        try:
            return await self.auth.on_challenge(resp.status, resp.headers, self.url, sent)
        except BaseException:
            resp.release()
            raise

    def _refused(self, status: int) -> str:
        """A final 401/403, for people: what it means and what to pass (never the server's body)."""
        if self.auth is None:
            return (
                f"the server at {self.url} requires authorization (HTTP {status}); "
                "connect with auth=elicitkit.auth.OAuth() or another auth object (docs/auth.md)"
            )
        why = "the credentials are not accepted" if status == 401 else "the credentials lack a permission it needs"
        return f"the server at {self.url} refused our authorization (HTTP {status}): {why}"

    def _unreachable(self, exc: aiohttp.ClientError) -> str:
        """A connection failure, for people: what failed and what to check (no aiohttp internals)."""
        if isinstance(exc, aiohttp.ClientConnectorError):
            reason = exc.os_error.strerror or str(exc.os_error) or type(exc.os_error).__name__
            return f"cannot connect to {exc.host}:{exc.port} ({reason}); is the server running at {self.url}?"
        return f"the connection to {self.url} failed ({type(exc).__name__}: {exc}); is the server still running?"

    async def _session_gone(self, request_id: RequestId, session_id: str) -> None:
        """HTTP 404 for a request that carried a session id: the server no longer has that session.

        The 2025-11-25 transport rules say the client starts a new session (``initialize``
        without a session id); this forgets the old one and fails the request with a local error
        whose ``data`` says so, and the client above decides to re-initialize.
        """
        if self.session_id == session_id:
            self.session_id = None
            self._listening = False
        why = f"the server no longer knows session {session_id!r} (HTTP 404)"
        error = MCPError(CONNECTION_CLOSED, why, {SESSION_EXPIRED: session_id})
        await self._deliver(ErrorResponse(request_id, error).to_wire())

    async def _send_answer(self, message: JSON, headers: dict[str, str]) -> None:
        """A response or notification: one POST (expect 202), a few at a time, retried if the
        connection fails (an answer lost here would leave the server's question waiting)."""
        assert self._http is not None
        if self._answers is None:
            self._answers = anyio.Semaphore(MAX_CONCURRENT_ANSWERS)
        data = encode(message)
        is_answer = "method" not in message
        call = self._asked_in.pop(message.get("id"), None) if is_answer else None  # type: ignore[arg-type]
        give_up = anyio.current_time() + ANSWER_RETRY_SECONDS
        answers = self._answers
        try:  # a free slot (the usual case) costs no turn of the loop, as `async with` would
            answers.acquire_nowait()
        except anyio.WouldBlock:
            await answers.acquire()
        try:
            attempt = 0
            while True:
                attempt += 1
                try:
                    authorized, _ = await self._authorized("POST", headers)
                    async with self._http.post(self.url, data=data, headers=authorized) as resp:
                        if self.sessions and self.session_id is None and "mcp-session-id" in resp.headers:
                            self.session_id = resp.headers["mcp-session-id"]
                        body = await resp.read()
                except aiohttp.ClientConnectionError:
                    if attempt >= ANSWER_ATTEMPTS:
                        raise
                    await anyio.sleep(0.05 * attempt)
                    continue
                if resp.status < 400:
                    return
                if is_answer and resp.status in ANSWER_RETRY_STATUSES and anyio.current_time() < give_up:
                    await anyio.sleep(min(0.1 * 2 ** min(attempt, 4), 1.0))
                    continue
                what = message.get("method", "response")
                logger.warning("server refused a %s: HTTP %d %s", what, resp.status, body[:200])
                if call is not None:  # the call this answered fails, rather than wait for nothing
                    why = f"the server refused the answer to its question (HTTP {resp.status}): {_reason(body)}"
                    await self._lost(call, why)
                return
        finally:
            answers.release()

    async def _deliver(self, obj: Any) -> None:
        assert self._feed is not None
        await self._feed(obj)

    async def _lost(self, request_id: RequestId, why: str) -> None:
        """Tell the waiting request its answer will not come, as a local (never peer) error."""
        await self._deliver(ErrorResponse(request_id, MCPError(CONNECTION_CLOSED, why)).to_wire())

    # -- SSE ------------------------------------------------------------------------

    async def _read_sse(self, resp: aiohttp.ClientResponse, request_id: RequestId) -> None:
        parser = SSEParser()
        answered = await self._consume(resp, parser, request_id)
        attempts = 0
        while not answered:
            if not self.sessions or parser.last_event_id is None or attempts >= MAX_RESUME_ATTEMPTS:
                await self._lost(request_id, "the response stream ended before the response arrived")
                return
            attempts += 1
            await anyio.sleep((parser.retry if parser.retry is not None else DEFAULT_RETRY_MS) / 1000)
            resumed = await self._get(parser.last_event_id)
            if resumed is None:
                continue
            answered = await self._consume(resumed, parser, request_id)

    async def _consume(self, resp: aiohttp.ClientResponse, parser: SSEParser, request_id: RequestId | None) -> bool:
        """Feed every event's message; True once the response to ``request_id`` went by."""
        answered = False
        try:
            with anyio.CancelScope() as reading:
                if request_id is not None and not self.sessions:
                    if request_id in self._dropped:  # cancelled before its stream came
                        self._dropped.discard(request_id)
                        reading.cancel()
                    self._reading[request_id] = reading
                async for chunk in resp.content.iter_any():
                    for event in parser.feed(chunk):
                        if not event.data:
                            continue  # priming events and keep-alives carry only an id
                        try:
                            obj = orjson.loads(event.data)
                        except orjson.JSONDecodeError:
                            logger.warning("ignored an SSE event that is not JSON")
                            continue
                        if answered:
                            with anyio.CancelScope(shield=True):  # the end-of-stream wait must not cut it
                                await self._deliver(obj)
                            continue
                        if request_id is not None and isinstance(obj, dict) and "method" in obj and "id" in obj:
                            if len(self._asked_in) >= _ASKED_REMEMBERED:
                                self._asked_in.clear()
                            self._asked_in[obj["id"]] = request_id  # a question asked on this call
                        if (
                            request_id is not None
                            and isinstance(obj, dict)
                            and obj.get("id") == request_id
                            and "method" not in obj
                        ):
                            answered = True
                            # The server ends the stream right after the response. Reading on to
                            # that end (briefly) hands the connection back to the pool; leaving
                            # now would close it and cost the next request a new one.
                            reading.deadline = anyio.current_time() + STREAM_END_GRACE
                        await self._deliver(obj)
        except (aiohttp.ClientError, anyio.EndOfStream):
            pass
        finally:
            if request_id is not None and self._reading.get(request_id) is reading:
                del self._reading[request_id]
            resp.release()
        return answered

    async def _get(self, last_event_id: str | None) -> aiohttp.ClientResponse | None:
        assert self._http is not None
        headers = self._headers()
        headers["Accept"] = "text/event-stream"
        del headers["Content-Type"]
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        headers, _ = await self._authorized("GET", headers)
        try:
            resp = await self._http.get(self.url, headers=headers)
        except aiohttp.ClientError as exc:
            logger.info("GET stream failed: %s", exc)
            return None
        if resp.status != 200 or not resp.headers.get("content-type", "").startswith("text/event-stream"):
            resp.release()
            return None
        return resp

    async def _standalone(self, resp: aiohttp.ClientResponse) -> None:
        """Read the standalone GET stream; reconnect after ``retry`` while the server keeps it."""
        parser = SSEParser()
        while True:
            await self._consume(resp, parser, None)
            await anyio.sleep((parser.retry if parser.retry is not None else DEFAULT_RETRY_MS) / 1000)
            reopened = await self._get(parser.last_event_id)
            if reopened is None:
                return
            resp = reopened


def _reason(body: bytes) -> str:
    """What a refusal says: its JSON-RPC error message, else the start of its body."""
    try:
        message = orjson.loads(body)["error"]["message"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return body[:200].decode(errors="replace") or "no reason given"
    return str(message)[:200]
