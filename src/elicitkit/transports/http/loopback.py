"""An ASGI app on a random loopback port, inside the running event loop, for as long as it is needed.

The browser form must not be reachable from other machines and must not disturb the
application that hosts the client: :class:`LoopbackServer` binds ``127.0.0.1`` port 0 (the
system picks a free port), runs uvicorn as a task of the current loop, leaves logging
configuration and Ctrl-C to the application, and stops within a second when asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp

# uvicorn is imported when a server starts: the classes that hold a LoopbackServer (the browser
# handler, the OAuth redirect) are part of ``import elicitkit``, which must not pay for it.

__all__ = ["LOOPBACK", "LoopbackServer"]

logger = logging.getLogger("elicitkit.client.handlers.browser")

LOOPBACK = "127.0.0.1"


def _uvicorn(config: uvicorn.Config) -> uvicorn.Server:
    """A uvicorn server that leaves Ctrl-C to the application that runs the client."""
    import uvicorn

    class _Uvicorn(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # Ctrl-C belongs to the application that runs the client, not to this little server

    return _Uvicorn(config)


class LoopbackServer:
    """Serves ``app`` on ``127.0.0.1`` at a port the system picks; :meth:`start` and :meth:`stop` may repeat.

    ``port``: a fixed port instead (an OAuth client registered with one exact redirect URI).
    """

    def __init__(self, app: ASGIApp, port: int = 0) -> None:
        self.app = app
        self.port = port
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    async def start(self) -> str:
        """Start listening; returns ``127.0.0.1:<port>`` (what the ``Host`` header of a request to it says)."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((LOOPBACK, self.port))  # port 0: the system picks a free one
            sock.listen(64)
        except OSError:
            sock.close()
            raise
        port = sock.getsockname()[1]
        import uvicorn

        config = uvicorn.Config(
            self.app,
            interface="asgi3",
            http="h11",
            ws="none",
            lifespan="off",
            log_config=None,  # a library must not reconfigure the application's logging
            access_log=False,
            proxy_headers=False,
            server_header=False,
            date_header=False,
            limit_concurrency=64,
            timeout_keep_alive=5,
            timeout_graceful_shutdown=1,
        )
        server = _uvicorn(config)
        task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]), name="elicitkit-browser-form")
        with anyio.fail_after(10):
            while not server.started:  # uvicorn offers no started event
                if task.done():
                    sock.close()
                    task.result()
                    raise RuntimeError("the browser form server stopped while starting")
                await anyio.sleep(0.005)
        self._server, self._task = server, task
        host = f"{LOOPBACK}:{port}"
        logger.debug("browser form server listening on http://%s", host)
        return host

    async def stop(self) -> None:
        """Stop listening (open connections get a second to finish); nothing if not running."""
        server, task = self._server, self._task
        self._server = self._task = None
        if server is None or task is None:
            return
        server.should_exit = True
        with anyio.CancelScope(shield=True):
            try:
                await task
            except Exception:
                logger.exception("the browser form server failed while stopping")
