"""A small low-level server for the runtime and bad-input tests.

Imported by the tests (in-memory and HTTP run it in the test's own event loop, so they can look
at its sessions directly) and run as a script for the stdio tests::

    python tests/support_server.py [MAX_MESSAGE_BYTES]

which serves it on stdin/stdout with ``serve_stdio`` and logs to stderr at INFO, so a test can
read what the server dropped or cancelled from the child's stderr.

Tools (all answered through ``tools/call``):

* ``echo {text}``: the text back.
* ``sleep {seconds, value}``: sleeps, then answers ``str(value)``; records start, cancellation
  and completion by request id (and prints ``started:<id>``, ``cancelled:<id>`` and
  ``finished:<id>`` lines to stderr, for tests that watch a child process).
* ``progress {steps, delay}``: one ``notifications/progress`` per step, ``delay`` apart.
* ``roots``: asks the client ``roots/list`` and answers its result as structured content.
* ``ping_client``: sends ``ping`` to the client and answers its result.
* ``stats``: ``running_incoming`` of this session and the number of asyncio tasks in the process.
* ``notify_later {delay}``: answers at once; ``delay`` later the session sends
  ``notifications/tools/list_changed`` unrelated to any request.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import anyio

from elicitkit import MCPError
from elicitkit.compat import LowLevelServer
from elicitkit.protocol.errors import INVALID_PARAMS
from elicitkit.protocol.jsonrpc import JSON, RequestId
from elicitkit.server.scope import RequestScope as RequestContext
from elicitkit.server.session import ServerSession

TOOL_NAMES = ("echo", "sleep", "progress", "roots", "ping_client", "stats", "notify_later")


def text(value: str, structured: dict[str, Any] | None = None) -> JSON:
    result: JSON = {"content": [{"type": "text", "text": value}]}
    if structured is not None:
        result["structuredContent"] = structured
    return result


class SupportServer(LowLevelServer):
    """A :class:`LowLevelServer` that remembers its sessions and what its handlers went through."""

    def __init__(self) -> None:
        # listChanged: the server may speak unasked, so an HTTP Client opens the standalone GET stream
        super().__init__(
            "support-server",
            "1.2.3",
            instructions="used by the elicitkit tests",
            capabilities={"tools": {"listChanged": True}},
        )
        self.url: str | None = None  # set by tests that serve it over HTTP
        self.sessions: list[ServerSession] = []
        self.started: list[RequestId] = []
        self.cancelled: list[RequestId] = []
        self.finished: list[RequestId] = []
        self.set_request_handler("tools/list", self._list_tools)
        self.set_request_handler("tools/call", self._call_tool)

    def create_session(self, send: Any, **kwargs: Any) -> ServerSession:
        session = super().create_session(send, **kwargs)
        self.sessions.append(session)
        return session

    async def _list_tools(self, ctx: RequestContext) -> JSON:
        return {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in TOOL_NAMES]}

    async def _call_tool(self, ctx: RequestContext) -> JSON:
        name = ctx.params.get("name")
        args = ctx.params.get("arguments") or {}
        if name == "echo":
            return text(str(args.get("text", "")))
        if name == "sleep":
            return await self._sleep(ctx, float(args.get("seconds", 0)), args.get("value"))
        if name == "progress":
            steps = int(args.get("steps", 3))
            for i in range(1, steps + 1):
                await ctx.report_progress(i, steps, f"step {i}")
                await anyio.sleep(float(args.get("delay", 0)))
            return text("done")
        if name == "roots":
            return text("roots", await ctx.send_request("roots/list"))
        if name == "ping_client":
            return text("pinged", await ctx.send_request("ping"))
        if name == "stats":
            stats = {"running_incoming": ctx.session.peer.conn.running_incoming, "tasks": len(asyncio.all_tasks())}
            return text("stats", stats)
        if name == "notify_later":
            session = ctx.session

            async def later(delay: float) -> None:
                await anyio.sleep(delay)
                await session.send_notification("notifications/tools/list_changed")

            session.peer.spawn(later, float(args.get("delay", 0.1)))
            return text("scheduled")
        raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}")

    async def _sleep(self, ctx: RequestContext, seconds: float, value: Any) -> JSON:
        self.started.append(ctx.request_id)
        print(f"started:{ctx.request_id}", file=sys.stderr, flush=True)
        try:
            await anyio.sleep(seconds)
        except BaseException:
            self.cancelled.append(ctx.request_id)
            print(f"cancelled:{ctx.request_id}", file=sys.stderr, flush=True)
            raise
        self.finished.append(ctx.request_id)
        print(f"finished:{ctx.request_id}", file=sys.stderr, flush=True)
        return text(str(value))


def main() -> None:
    from elicitkit.transports.stdio import serve_stdio

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else None
    server = SupportServer()
    if limit is None:
        anyio.run(serve_stdio, server)
    else:
        anyio.run(lambda: serve_stdio(server, max_message_bytes=limit))
    print("server exited cleanly", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
