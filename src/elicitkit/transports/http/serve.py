"""Running the endpoint: a mountable Starlette app, and uvicorn in this event loop."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import TYPE_CHECKING, Any

import anyio

from elicitkit.runtime.contract import Endpoint
from elicitkit.transports.http.asgi import StreamableHTTPHandler
from elicitkit.transports.http.responses import ASGISend, Receive, Scope, send_plain

if TYPE_CHECKING:
    from starlette.applications import Starlette


def create_app(server: Endpoint, *, path: str = "/mcp", **options: Any) -> Starlette:
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
            return send_plain(send, 404, "Not Found")
        if kind in ("http", "lifespan"):
            return self.handler(scope, receive, send)
        return _nothing()


async def _nothing() -> None:
    return None


def _serving_app(server: Endpoint, path: str, options: dict[str, Any]) -> _Endpoint:
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
    server: Endpoint, *, host: str = "127.0.0.1", port: int = 0, path: str = "/mcp", **options: Any
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
    server: Endpoint, *, host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp", **options: Any
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
