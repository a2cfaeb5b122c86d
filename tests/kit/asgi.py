"""An ASGI app under uvicorn in the test's own event loop, on a free loopback port.

For tests that build their own app around the endpoint (a user's Starlette app, an auth
stand-in); a bare server has ``elicitkit.testing.kit``'s ``http_in_process``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio


@contextlib.asynccontextmanager
async def serve_app(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` (its lifespan on) until the block ends; yields ``http://127.0.0.1:<port>``."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", access_log=False)
    userver = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(userver.serve)
        while not userver.started:  # noqa: ASYNC110 - uvicorn offers no started event
            await anyio.sleep(0.01)
        port = userver.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            userver.should_exit = True
