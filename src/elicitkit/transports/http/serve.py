"""Running the endpoint: a mountable Starlette app, and uvicorn in this event loop.

The two runners (:func:`serve_http`, :func:`serve_http_background`) also own what happens
around a request, which an ASGI app cannot see:

- **Read timeouts.** A request's header block must arrive within ``header_timeout`` seconds of
  the connection (or, on a kept-alive connection, of its first byte), and its body within
  ``body_timeout`` seconds of the headers; otherwise the connection gets a 408 and is closed.
  Both are deadlines, not idle timers, so a client trickling one byte a second cannot hold a
  connection. uvicorn's own ``timeout_keep_alive`` (5 s) still closes idle kept-alive
  connections.
- **Idle connections.** At most ``max_idle_connections`` (64) kept-alive connections wait for
  a next request; a response that would make one more says ``connection: close``. A client
  that parks many 2026 rounds at once (each answered, its connection then idle until the
  person answers) would otherwise leave the server holding a connection per round. An idle
  connection keeps nothing of its last request (no headers, scope or request cycle).
  An app from :func:`create_app` runs under whatever server you choose: set its
  limits there.
- **Logging.** Quiet by default: uvicorn logs at ``warning`` and writes no access log;
  ``log_level=`` and ``access_log=`` change that.
- **Shutdown.** On SIGINT or SIGTERM it stops accepting, ends the open GET streams, and gives
  the requests in flight ``shutdown_grace`` seconds; then it ends every session, which cancels
  what their tools are doing. A second signal skips the rest of the grace. If a tool still will
  not stop (it swallows cancellation, or blocks), the process exits anyway a few seconds later
  (:mod:`elicitkit.transports.shutdown`). The exit status is 0.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import errno
import logging
import math
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

import anyio

from elicitkit.errors import ElicitkitError
from elicitkit.runtime.contract import ASGIApp, Endpoint
from elicitkit.transports.http.asgi import StreamableHTTPHandler
from elicitkit.transports.http.responses import DISCONNECT_HOOK, ASGISend, Receive, Scope, send_plain
from elicitkit.transports.http.security import LOOPBACK_HOSTS, parse_authority, read_headers
from elicitkit.transports.http.sessions import SessionTable

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette


def create_app(server: Endpoint, *, path: str = "/mcp", **options: Any) -> Starlette:
    """A Starlette app serving ``server`` at ``path``; mount it anywhere, or run it with uvicorn.

    The server's own form pages (:mod:`elicitkit.server.pages`) are served beside it at
    ``<path>/ask/<token>``, under whatever prefix the app is mounted at (see :class:`_AppPages`).
    Starlette does not run a mounted app's lifespan: enter ``app.router.lifespan_context(app)``
    in the host app's own lifespan.
    """
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import BaseRoute, Mount, Route

    handler = StreamableHTTPHandler(server, **_with_backplane(server, options))

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with handler.run():
            yield

    endpoint = Route(path, endpoint=handler, methods=["GET", "POST", "DELETE"])
    routes: list[BaseRoute] = [endpoint]
    pages = _AppPages(server, handler, path, endpoint)
    routes.append(Mount(pages.path, app=pages))
    gate = Middleware(_Gated, server=server, open_prefix=pages.path + "/")
    app = Starlette(routes=routes, lifespan=lifespan, middleware=[gate])
    app.state.mcp_handler = handler
    return app


class _Gated:
    """The server's bearer-token gate (``Endpoint.http_gate``) as Starlette middleware."""

    def __init__(self, app: ASGIApp, server: Endpoint, open_prefix: str) -> None:
        self.gated = server.http_gate(app, open_prefix)

    def __call__(self, scope: Scope, receive: Receive, send: ASGISend) -> Awaitable[None]:
        return self.gated(scope, receive, send)


class _AppPages:
    """The form pages inside a :func:`create_app` app, which cannot know where it is reached.

    The links a page's question carries need the address people reach the app at and the
    prefix it is mounted under. Both are learnt from the endpoint's first request that names
    this machine (a loopback name) or a host the endpoint allows (``allowed_hosts``): a Host
    anyone could send is never made into the link others are given. Until then the endpoint's
    route goes through :meth:`learn` (a plain call, no frame); then the route is the handler
    again. With ``configure_pages(server, public_url=...)`` the links use that address.
    """

    def __init__(self, server: Endpoint, handler: StreamableHTTPHandler, path: str, route: Any) -> None:
        self.server = server
        self.handler = handler
        self.route = route
        self.path = path.rstrip("/") + "/ask"
        self.app: ASGIApp | None = None
        route.app = self.learn

    def allows(self, host: str) -> bool:
        """A Host the endpoint itself would accept with DNS-rebinding protection on."""
        authority = parse_authority(host)
        guard = self.handler.guard
        return authority is not None and (authority[0] in LOOPBACK_HOSTS or host.lower() in guard.allowed_hosts)

    def learn(self, scope: Scope, receive: Receive, send: ASGISend) -> Awaitable[None]:
        if scope["type"] == "http":
            host = read_headers(scope["headers"]).get("host", "")
            prefix = scope.get("root_path", "") + self.path + "/"
            if self.allows(host):
                base = f"{scope.get('scheme', 'http')}://{host}"
                self.app = self.server.serve_pages(prefix, base, self.allows)
                self.route.app = self.handler  # learnt: nothing more per request
            elif self.app is None:  # links only from public_url, until a vetted Host comes
                self.app = self.server.serve_pages(prefix, None, self.allows)
        return self.handler(scope, receive, send)

    def __call__(self, scope: Scope, receive: Receive, send: ASGISend) -> Awaitable[None]:
        if self.app is None or scope["type"] != "http":  # no page can exist before the endpoint's first request
            return send_plain(send, 404, "Not Found")
        return self.app(scope, receive, send)


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
        self.pages: ASGIApp | None = None  # the server's form pages, at ``<path>/ask/`` (see mount_pages)
        self.pages_prefix = path.rstrip("/") + "/ask/"

    def mount_pages(self, server: Endpoint, base_url: str) -> None:
        """Serve the server's own form pages beside the endpoint (``Endpoint.serve_pages``)."""
        self.pages = server.serve_pages(self.pages_prefix, base_url)

    def __call__(self, scope: Scope, receive: Receive, send: ASGISend) -> Awaitable[None]:
        # A plain function returning the handler's coroutine: no frame of ours per request.
        kind = scope["type"]
        if kind == "http" and scope["path"] != self.path:
            if self.pages is not None and scope["path"].startswith(self.pages_prefix):
                return self.pages(scope, receive, send)
            return send_plain(send, 404, "Not Found")
        if kind in ("http", "lifespan"):
            return self.handler(scope, receive, send)
        return _nothing()


async def _nothing() -> None:
    return None


def _serving_app(server: Endpoint, path: str, options: dict[str, Any]) -> _Endpoint:
    return _Endpoint(StreamableHTTPHandler(server, **_with_backplane(server, options)), path)


def _with_backplane(server: Endpoint, options: dict[str, Any]) -> dict[str, Any]:
    """The server's backplane (``Server(backplane=...)`` or ``$ELICITKIT_REDIS_URL``) unless the
    caller named one."""
    if "backplane" not in options:
        chosen = server.http_backplane()
        if chosen is not None:
            return {**options, "backplane": chosen}
    return options


# -- read timeouts ----------------------------------------------------------------------------

logger = logging.getLogger("elicitkit.http")

DEFAULT_HEADER_TIMEOUT = 10.0  # seconds for a request's whole header block
DEFAULT_MAX_IDLE_CONNECTIONS = 64  # kept-alive connections waiting for a next request, at most
DEFAULT_BODY_TIMEOUT = 30.0  # seconds for its whole body once the headers are in (4 MiB at ~140 kB/s)
DEFAULT_SHUTDOWN_GRACE = 5.0  # seconds requests in flight get after SIGINT/SIGTERM
DEFAULT_LOG_LEVEL = "warning"
_CANCEL_MARGIN = 1.0  # after the grace: sessions are ended; this long later uvicorn cancels the requests


_IDLE, _HEADERS, _BODY = 0, 1, 2
# httptools buffers a header block of any size (10 MB was taken whole); h11 stops at 16 KiB.
MAX_HEADER_BYTES = 64 * 1024
_HEADERS_TOO_LARGE_TEXT = b"request header block too large"
_HEADERS_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: "
    + str(len(_HEADERS_TOO_LARGE_TEXT)).encode()
    + b"\r\nconnection: close\r\n\r\n"
    + _HEADERS_TOO_LARGE_TEXT
)
_REQUEST_TIMEOUT_TEXT = b"request not received in time"
_REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: "
    + str(len(_REQUEST_TIMEOUT_TEXT)).encode()
    + b"\r\nconnection: close\r\n\r\n"
    + _REQUEST_TIMEOUT_TEXT
)


def timed_protocol(
    header_timeout: float | None, body_timeout: float | None, max_idle: int | None = None
) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with deadlines for reading a request (None: no deadline),
    a cap of :data:`MAX_HEADER_BYTES` on a request's header block (431 beyond it), and at most
    ``max_idle`` kept-alive idle connections (None: no cap).

    uvicorn has no deadline: its keep-alive timer runs only between requests, so a connection
    that sends nothing, or a byte a second, is kept forever (measured: 20 of 20 such sockets
    still open after 12 s; with the default deadlines, none). One timer per connection at a
    time, re-armed only when it fires early, keeps the cost per request to a few attribute writes.
    """
    import httptools
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

    cap = math.inf if max_idle is None else max_idle
    # Connections of this server kept alive between requests. An instance's attribute, not the
    # class's: writing a class attribute bumps the type's version, which throws away CPython's
    # attribute caches for every method of the protocol, on every request.
    idle = _Count()
    local = _Local()  # this server's address, one tuple for every connection
    # uvicorn's set of request tasks (one per server) -> its ``discard``, made once.
    forget: dict[int, Callable[[Any], None]] = {}

    class CappedCycle(RequestResponseCycle):
        """uvicorn's request cycle, deciding keep-alive when the response starts: closed when
        ``max_idle`` connections already wait idle (a burst of answered 2026 rounds, say)."""

        def send(self, message: Any) -> Awaitable[None]:  # type: ignore[override]
            # A plain function handing back uvicorn's coroutine: no frame of ours per message.
            if self.keep_alive and not self.response_started and idle.n >= cap:
                self.keep_alive = False
            return super().send(message)

    class Pipeline(list):  # type: ignore[type-arg]
        """uvicorn's queue of pipelined requests (appendleft, pop), as a list: an empty deque
        is a 600-byte block per connection, and pipelining is rare."""

        def appendleft(self, item: Any) -> None:
            self.insert(0, item)

    class TimedHttpToolsProtocol(HttpToolsProtocol):
        # Slots: more keys would grow every connection's instance dict to its next size.
        __slots__ = (
            "_deadline",
            "_gathering",
            "_header_bytes",
            "_idle",
            "_idle_since",
            "_lost_watch",
            "_parser_dropped",
            "_phase",
            "_read_timer",
        )

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._phase = _IDLE
            self._deadline = 0.0
            self._read_timer: asyncio.TimerHandle | None = None
            self._header_bytes = 0
            self._idle = False
            self._idle_since: float | None = None  # when the last response ended, while idle (see on_response_complete)
            self._lost_watch: Any = None  # the endpoint's watch on a waiting request (see watch_lost)
            self._parser_dropped = False  # (see request_waits)
            self._gathering: RequestResponseCycle | None = None  # (see gather)
            self.pipeline = Pipeline()  # type: ignore[assignment]

        def watch_lost(self, watch: Any) -> None:
            """The endpoint's :data:`DISCONNECT_HOOK`: call ``watch.lost()`` if the connection goes
            away (None: stop). A request waiting on a person needs no task reading ``receive()``.
            A connection already gone (the client left while the answer was quick to wait for)
            is told at once."""
            if watch is not None and self.transport.is_closing():
                watch.lost()
                return
            self._lost_watch = watch

        def gather(self, scope: Any) -> None:
            """The endpoint's hook: hold what the response to ``scope`` writes until :meth:`flush`,
            then write it at once. A response's head, its first events and, at its end, its last
            event and the chunked terminator each went out in a write (a segment, a wake-up of
            the client) of their own. Not behind a pipelined request (rare: written as they come)."""
            cycle = self.cycle
            if self._gathering is None and cycle is not None and cycle.scope is scope and not self.pipeline:
                self._gathering = cycle
                cycle.transport = _Gathered()  # type: ignore[assignment]

        def flush(self) -> None:
            """Write what :meth:`gather` held, in one write (nothing held: nothing to do)."""
            cycle = self._gathering
            if cycle is None:
                return
            self._gathering = None
            held: _Gathered = cycle.transport  # type: ignore[assignment]
            cycle.transport = self.transport
            parts = held.parts
            if parts:
                self.transport.write(parts[0] if len(parts) == 1 else b"".join(parts))
            if held.closed:
                self.transport.close()

        def request_waits(self) -> None:
            """The endpoint's hook: this connection's request, its body read, now waits (an SSE
            answer: for a person, maybe). Its HTTP parser (about 850 bytes of C state) goes until
            more bytes come; a fresh one parses them (llhttp keeps nothing from one request to
            the next). Not on a connection that will close, or with a request queued behind."""
            cycle = self.cycle
            if (
                self._phase == _IDLE
                and cycle is not None
                and cycle.keep_alive
                and not self.pipeline
                and self.parser is not None
                and not self.transport.is_closing()
            ):
                self.parser = None  # type: ignore[assignment]
                self._parser_dropped = True
            if cycle is not None and not cycle.body and type(cycle.body) is bytearray:
                cycle.body = b""  # type: ignore[assignment]  # (its body read: no empty bytearray of its own)
            if self._phase == _IDLE:  # its message is complete: uvicorn reads neither again
                self.headers = _NO_HEADERS  # (a new request starts a list of its own)
                self.url = b""

        def _reading(self, phase: int, limit: float | None) -> None:
            self._phase = phase
            self._header_bytes = 0
            if limit is None:
                self._deadline = math.inf
                return
            self._deadline = self.loop.time() + limit
            timer = self._read_timer
            if timer is None or timer.when() > self._deadline:
                if timer is not None:
                    timer.cancel()
                self._read_timer = self.loop.call_at(self._deadline, self._check_read)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            _small_waiters(self.flow._is_writable_event)
            # uvicorn made its own (host, port) tuples of both ends: the client's is the one the
            # transport already holds, and this server's is the same for every connection.
            peer = transport.get_extra_info("peername")
            if type(peer) is tuple and peer == self.client:
                self.client = peer
            if self.server is not None and self.server == local.address:
                self.server = local.address
            else:
                local.address = self.server
            self._reading(_HEADERS, header_timeout)

        def data_received(self, data: bytes) -> None:
            if self._parser_dropped:
                self._parser_dropped = False
                self.parser = httptools.HttpRequestParser(self)
                with contextlib.suppress(AttributeError):  # as uvicorn sets it (httptools >= 0.6.3)
                    self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
            super().data_received(data)
            if self._phase == _HEADERS:  # all of it was header bytes: the block is not complete yet
                self._header_bytes += len(data)
                if self._header_bytes > MAX_HEADER_BYTES and not self.transport.is_closing():
                    self._phase = _IDLE
                    logger.info("closed a connection from %s: header block too large", self.client)
                    if self.cycle is None or self.cycle.response_complete:
                        self.transport.write(_HEADERS_TOO_LARGE)
                    self.transport.close()

        def on_message_begin(self) -> None:
            if self._idle:
                self._idle = False
                idle.n -= 1
            super().on_message_begin()
            if self._phase == _IDLE:  # a kept-alive connection's next request
                self._reading(_HEADERS, header_timeout)

        def on_headers_complete(self) -> None:
            self.scope[DISCONNECT_HOOK] = self  # type: ignore[literal-required]  # (an ASGI scope takes any key)
            super().on_headers_complete()
            cycle = self.cycle
            if cycle is not None:
                _small_waiters(cycle.message_event)
                # More connections open than may wait idle: this one's response may have to say
                # ``connection: close``, decided as it starts (its task has not run yet, so every
                # send goes through the cap). Only then: an object whose class changed reads its
                # attributes at half speed (CPython's inline values), which every request would pay.
                if len(self.connections) > cap and type(cycle) is RequestResponseCycle:
                    cycle.__class__ = CappedCycle
            # The request's headers live on in its scope only (which the endpoint lets go of
            # once it has read them, for a request that waits): uvicorn reads them no more.
            self.headers = []
            self._reading(_BODY, body_timeout)

        def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
            """uvicorn's, less per request (its task lives as long as the request, minutes for a
            question waiting on a person): one constant task name (3.11 makes a ``Task-N``
            string for every unnamed task), and its done callback a method shared by every
            request, run in an empty context (uvicorn's makes a bound method and copies the
            context per request; the callback reads no context variable)."""
            if self.config.reset_contextvars:
                task = self.loop.create_task(cycle.run_asgi(app), name=REQUEST_TASK, context=contextvars.Context())
            else:
                task = self.loop.create_task(cycle.run_asgi(app), name=REQUEST_TASK)
            tasks = self.tasks
            discard = forget.get(id(tasks))  # (the method holds its set: no other gets that id)
            if discard is None:
                discard = forget[id(tasks)] = tasks.discard
            task.add_done_callback(discard, context=_CALLBACK_CONTEXT)
            tasks.add(task)

        def on_response_complete(self) -> None:
            # uvicorn's, with a lazy keep-alive timer: uvicorn arms one per response and cancels
            # it when the next request's bytes come (a call_later and a cancel per request); here
            # the connection notes when it went idle, and one timer per ``timeout_keep_alive``
            # checks that: it closes a connection idle that long, moves to when one idle for
            # less would be due, or lapses on a busy one (see _keep_alive_due).
            self.server_state.total_requests += 1
            if self.transport.is_closing():
                return
            self.flow.resume_reading()
            pipelined = bool(self.pipeline)
            if pipelined:
                cycle, app = self.pipeline.pop()
                self._start_asgi_task(cycle, app)  # (self.cycle is that one now)
            else:
                now = self.loop.time()
                self._idle_since = now
                if self.timeout_keep_alive_task is None:
                    due = now + self.timeout_keep_alive
                    self.timeout_keep_alive_task = self.loop.call_at(due, self._keep_alive_due)
            if pipelined or (self.parser is None and not self._parser_dropped):
                return
            if self._phase == _IDLE:  # else the request's body is still coming (a 413 answered early)
                self._forget_last()

        def _unset_keepalive_if_required(self) -> None:
            """uvicorn's hook when bytes come (and when the connection goes): busy, not idle. The
            timer stays armed; it lapses when it finds the connection busy."""
            self._idle_since = None

        def _keep_alive_due(self) -> None:
            self.timeout_keep_alive_task = None
            since = self._idle_since
            if since is None or self.transport.is_closing():
                return  # busy (the next response re-arms it), or gone
            due = since + self.timeout_keep_alive
            if self.loop.time() >= due:
                self.timeout_keep_alive_handler()
            else:
                self.timeout_keep_alive_task = self.loop.call_at(due, self._keep_alive_due)

        def _forget_last(self) -> None:
            """Kept alive, waiting for a next request: hold nothing of the last one (its cycle,
            scope and headers stay with its task while that still runs, and go with it)."""
            self.cycle = None  # type: ignore[assignment]
            self.scope = None  # type: ignore[assignment]
            self._lost_watch = None
            self.headers = []
            self.url = b""
            if not self._idle:
                self._idle = True
                idle.n += 1

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._phase = _IDLE
            cycle = self.cycle
            if cycle is not None and cycle.response_complete and not self.pipeline and not self.transport.is_closing():
                self._forget_last()  # answered before its body was all read: the connection idles now
            # Nothing to time while the request is served (it may wait on a person), but the timer
            # stays: it finds the connection idle and lapses, or the next request's deadline later
            # than its own and moves there, so a kept-alive connection arms one timer per
            # header_timeout instead of one per request (a call_at and a cancel each).

        def connection_lost(self, exc: Exception | None) -> None:
            if self._idle:
                self._idle = False
                idle.n -= 1
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None
            if self.timeout_keep_alive_task is not None:
                self.timeout_keep_alive_task.cancel()
                self.timeout_keep_alive_task = None
            gathering = self._gathering
            if gathering is not None:  # nobody to write it to
                self._gathering = None
                gathering.transport = self.transport
            super().connection_lost(exc)
            watch = self._lost_watch
            if watch is not None:
                self._lost_watch = None
                watch.lost()

        def _check_read(self) -> None:
            self._read_timer = None
            if self._phase == _IDLE or self.transport.is_closing():
                return
            left = self._deadline - self.loop.time()
            if left > 0:
                if left != math.inf:
                    self._read_timer = self.loop.call_at(self._deadline, self._check_read)
                return
            cycle = self.cycle
            if self._phase == _BODY and cycle is not None:
                answer = not cycle.response_started
                cycle.disconnected = True  # the endpoint reads http.disconnect; its sends go nowhere
                cycle.message_event.set()
            else:  # still reading headers: answer unless an earlier request's response is being written
                answer = cycle is None or cycle.response_complete
            logger.info(
                "closed a connection from %s: request %s not received in time",
                self.client,
                "body" if self._phase == _BODY else "headers",
            )
            self._phase = _IDLE
            if answer:
                self.transport.write(_REQUEST_TIMEOUT)
            self.transport.close()

    return TimedHttpToolsProtocol


class _Gathered:
    """What a response's cycle writes to while the endpoint gathers its writes (see ``gather``)."""

    __slots__ = ("closed", "parts")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        if data:
            self.parts.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


# A request's headers once its message is complete (see request_waits): uvicorn appends to a
# fresh list per request, never to this one (a tuple, so that a change there fails loudly).
_NO_HEADERS: list[tuple[bytes, bytes]] = ()  # type: ignore[assignment]
REQUEST_TASK = "elicitkit-http-request"  # the name of uvicorn's task serving one HTTP request
_CALLBACK_CONTEXT = contextvars.Context()


class _Local:
    __slots__ = ("address",)

    def __init__(self) -> None:
        self.address: tuple[str, int | None] | None = None


class _Count:
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


def _small_waiters(event: asyncio.Event) -> None:
    """An idle ``asyncio.Event``'s waiters as a list, not a deque: a deque is a 600-byte block
    from the start, and every connection (and every request) of uvicorn has an event or two
    that is rarely waited on. The event only appends, removes and iterates its waiters."""
    waiters = getattr(event, "_waiters", None)
    if type(waiters) is collections.deque and not waiters:
        event._waiters = []  # type: ignore[assignment]


# -- uvicorn -----------------------------------------------------------------------------------


class _Done:
    """An awaitable that is done at once (the end of the chain :class:`_ProxyHeaders` runs)."""

    __slots__ = ()

    def __await__(self) -> Iterator[None]:
        return iter(())


_DONE = _Done()


def _done(scope: Scope, receive: Receive, send: ASGISend) -> _Done:
    return _DONE


_FORWARDED_FIELDS = frozenset((b"x-forwarded-for", b"x-forwarded-proto"))  # what uvicorn's middleware reads


class _ProxyHeaders:
    """uvicorn's proxy-header middleware (on by default: ``X-Forwarded-For`` and
    ``X-Forwarded-Proto`` from ``forwarded_allow_ips`` set the scope's client and scheme),
    applied before the app is called instead of around it.

    uvicorn's middleware awaits the app inside its own coroutine, a frame every request keeps
    for as long as it runs (minutes, for a question waiting on a person). Here uvicorn's own
    middleware rewrites the scope in front of an app that is done at once (so its coroutine
    finishes in one step), then the app is called with no frame of ours around it.
    """

    def __init__(self, app: ASGIApp, trusted_hosts: list[str] | str) -> None:
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

        self.app = app
        self.rewrite = ProxyHeadersMiddleware(_done, trusted_hosts)  # type: ignore[arg-type]

    def __call__(self, scope: Scope, receive: Receive, send: ASGISend) -> Awaitable[None]:
        # uvicorn's middleware changes nothing without an X-Forwarded-* field, but asks first
        # whether the peer is a trusted host (an IP address parsed per request): look first.
        for name, _ in scope.get("headers", ()):
            if name in _FORWARDED_FIELDS:
                break
        else:
            return self.app(scope, receive, send)
        step = self.rewrite(scope, receive, send)  # type: ignore[arg-type]
        try:
            step.send(None)
        except StopIteration:
            pass
        else:  # pragma: no cover - uvicorn's middleware awaits nothing but the app
            step.close()
            raise RuntimeError("uvicorn's proxy-header middleware did not finish in one step")
        return self.app(scope, receive, send)


def _config(
    app: ASGIApp,
    host: str,
    port: int,
    *,
    log_level: str | int | None,
    access_log: bool,
    header_timeout: float | None,
    body_timeout: float | None,
    shutdown_grace: float,
    max_idle_connections: int | None = DEFAULT_MAX_IDLE_CONNECTIONS,
) -> uvicorn.Config:
    import uvicorn

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=access_log,
        lifespan="on",
        interface="asgi3",
        http=timed_protocol(header_timeout, body_timeout, max_idle_connections),
        # The last line before the force exit: cancel requests still running after the grace
        # and the end of every session.
        timeout_graceful_shutdown=math.ceil(shutdown_grace + _CANCEL_MARGIN),
        proxy_headers=False,  # applied by _ProxyHeaders instead, with the same trusted hosts
        # No ``server: uvicorn`` on every response: it tells a scanner what to try, and uvicorn
        # checks it against its header grammar once per response.
        server_header=False,
    )
    config.app = _ProxyHeaders(app, config.forwarded_allow_ips)
    return config


def _uvicorn_server(config: uvicorn.Config, table: SessionTable, grace: float, *, own_signals: bool) -> uvicorn.Server:
    """uvicorn's server, whose shutdown gives requests ``grace`` seconds and then ends every session."""
    import uvicorn

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if own_signals:
                yield  # signals are ours: uvicorn would re-raise them after shutting down
            else:
                with super().capture_signals():
                    yield

        async def shutdown(self, sockets: Any = None) -> None:
            table.drain()
            end_sessions = asyncio.get_running_loop().call_later(grace, table.close_all)
            try:
                await super().shutdown(sockets)
            finally:
                end_sessions.cancel()

    return _Server(config)


class HTTPServerHandle:
    """A running uvicorn server: its URL, and how to stop it."""

    def __init__(self, server: Any, url: str, handler: StreamableHTTPHandler | None = None) -> None:
        self._server = server
        self.url = url
        self.handler = handler  # the endpoint: its session table, for a test or a health check

    def stop(self) -> None:
        self._server.should_exit = True


@contextlib.asynccontextmanager
async def serve_http_background(
    server: Endpoint,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    path: str = "/mcp",
    log_level: str | int | None = DEFAULT_LOG_LEVEL,
    access_log: bool = False,
    header_timeout: float | None = DEFAULT_HEADER_TIMEOUT,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
    max_idle_connections: int | None = DEFAULT_MAX_IDLE_CONNECTIONS,
    **options: Any,
) -> AsyncIterator[HTTPServerHandle]:
    """Run uvicorn in this event loop for the duration of the block (port 0: pick a free one).

    ``options`` go to :class:`~.asgi.StreamableHTTPHandler` (``session_idle_timeout``,
    ``max_sessions``, ``dns_rebinding_protection``, ...); the rest is described in this module.
    """
    app = _serving_app(server, path, options)
    config = _config(
        server.http_gate(app, app.pages_prefix),
        host,
        port,
        log_level=log_level,
        access_log=access_log,
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        shutdown_grace=shutdown_grace,
        max_idle_connections=max_idle_connections,
    )
    userver = _uvicorn_server(config, app.handler.table, shutdown_grace, own_signals=False)
    async with anyio.create_task_group() as tg:
        tg.start_soon(userver.serve)
        while not userver.started:  # noqa: ASYNC110 - uvicorn offers no started event
            await anyio.sleep(0.01)
        sock_port = userver.servers[0].sockets[0].getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        app.mount_pages(server, f"http://{shown}:{sock_port}")
        handle = HTTPServerHandle(userver, f"http://{shown}:{sock_port}{path}", app.handler)
        try:
            yield handle
        finally:
            userver.should_exit = True


class CannotListen(ElicitkitError, OSError):
    """The HTTP server could not take its address (the port is taken, the host is not this machine's)."""


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a taken port is one clear error, not uvicorn's exit."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as uvicorn chooses ("localhost": IPv4)
    # proto=IPPROTO_TCP, as getaddrinfo gives uvicorn: asyncio turns Nagle off (TCP_NODELAY) only for
    # accepted sockets whose proto says TCP, and a proto of 0 left it on, so every answer written in
    # two pieces (an SSE question, then the result) waited for the peer's delayed ACK: S1 over
    # `elicitkit serve --transport http` took 44 ms a call instead of 1.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a TIME_WAIT port is free
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        said = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        if exc.errno == errno.EADDRINUSE:
            said += " (another server is using that port: stop it, or choose another port)"
        raise CannotListen(said) from None
    sock.set_inheritable(True)
    return sock


async def serve_http(
    server: Endpoint,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    log_level: str | int | None = DEFAULT_LOG_LEVEL,
    access_log: bool = False,
    header_timeout: float | None = DEFAULT_HEADER_TIMEOUT,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
    on_listening: Callable[[str], None] | None = None,
    max_idle_connections: int | None = DEFAULT_MAX_IDLE_CONNECTIONS,
    **options: Any,
) -> None:
    """Serve until SIGINT or SIGTERM, then shut down and return (exit status 0).

    After the first signal the process ends within about ``shutdown_grace`` + 4 seconds,
    whatever a tool is doing: past that, it exits from a watchdog thread. A port that cannot be
    had raises :class:`CannotListen` before anything starts; ``on_listening(url)`` is called once
    the endpoint accepts requests. ``options`` go to :class:`~.asgi.StreamableHTTPHandler`; the
    rest is described in this module.
    """
    import signal

    from elicitkit.transports.shutdown import FORCE_EXIT_AFTER, exit_after

    sock = _bind(host, port)
    port = sock.getsockname()[1]  # (port 0: the one the system chose, announced and used for pages)
    app = _serving_app(server, path, options)
    config = _config(
        server.http_gate(app, app.pages_prefix),
        host,
        port,
        log_level=log_level,
        access_log=access_log,
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        shutdown_grace=shutdown_grace,
        max_idle_connections=max_idle_connections,
    )
    table = app.handler.table
    shown = f"[{host}]" if ":" in host else host
    app.mount_pages(server, f"http://{shown}:{port}")  # a fixed port: known before binding
    userver = _uvicorn_server(config, table, shutdown_grace, own_signals=True)
    async with anyio.create_task_group() as tg:

        async def announce() -> None:
            while not userver.started:  # noqa: ASYNC110 - uvicorn offers no started event
                await anyio.sleep(0.01)
            if on_listening is not None:
                on_listening(f"http://{shown}:{port}{path}")

        tg.start_soon(announce)

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    if userver.should_exit:  # a second signal: no more grace
                        table.close_all()
                        continue
                    userver.should_exit = True
                    exit_after(math.ceil(shutdown_grace + _CANCEL_MARGIN) + FORCE_EXIT_AFTER, "a request")

        tg.start_soon(stop_on_signal)
        with sock:
            await userver.serve(sockets=[sock])
        tg.cancel_scope.cancel()
