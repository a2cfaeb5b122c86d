"""A 2026 stream keeps no message it wrote, and at most ``UNREAD_LIMIT`` its client did not read
(issue 28, point 7: every notification a listen stream ever sent was kept until it closed, so 21
streams x 20,000 changes held 420,021 events). 20 listen streams whose clients read and 5 whose
clients never read, through 10,000 changes (``--slow``; 2,000 by default): what the server holds
is flat after the first thousand."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit

import anyio
import orjson
import pytest

from elicitkit import Server
from elicitkit.transports.http.serve import serve_http_background
from elicitkit.transports.http.sessions import UNREAD_LIMIT
from kit.raw import ACCEPT, headers_for
from server.test_listen import EXT, frames

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

READERS, IDLE = 20, 5


def _listen_request(url: str, tag: str) -> bytes:
    params = {"notifications": {"toolsListChanged": True}, "_meta": EXT}
    body = orjson.dumps({"jsonrpc": "2.0", "id": tag, "method": "subscriptions/listen", "params": params})
    parts = urlsplit(url)
    headers = {"Accept": ACCEPT, "Content-Type": "application/json", **headers_for("subscriptions/listen", params)}
    head = f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Length: {len(body)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return head.encode() + b"\r\n" + body


@pytest.mark.parametrize("changes", [2_000, pytest.param(10_000, marks=pytest.mark.slow)])
async def test_listen_streams_hold_a_bounded_backlog_whether_or_not_their_clients_read(changes: int) -> None:
    server = Server("backlog")
    heard = [0] * READERS
    async with serve_http_background(server, port=0) as served, contextlib.AsyncExitStack() as stack:

        async def read(index: int) -> None:
            async for frame in frames(served.url, {"toolsListChanged": True}, EXT, 10**9):
                if frame.get("method") == "notifications/tools/list_changed":
                    heard[index] += 1

        idle = []
        for n in range(IDLE):  # a client that sends its listen request and never reads a byte
            host, port = urlsplit(served.url).netloc.split(":")
            _reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(_listen_request(served.url, f"idle-{n}"))
            await writer.drain()
            idle.append(writer)
            stack.callback(writer.close)
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        for index in range(READERS):
            tg.start_soon(read, index)
        table = served.handler.table

        def held() -> int:
            session = table._stateless
            return 0 if session is None else sum(len(s.events) for s in session.streams.values())

        async def wait_streams() -> None:
            with anyio.fail_after(20):
                while (s := table._stateless) is None or len(s.streams) < READERS + IDLE:  # noqa: ASYNC110
                    await anyio.sleep(0.02)

        await wait_streams()
        peak_after_first_thousand = 0
        held_at_thousand = None
        for sent in range(1, changes + 1):
            await server.notify_tools_changed()
            if sent % 100 == 0:
                await anyio.sleep(0.01)  # the readers get their turn
            if sent >= 1_000:
                if held_at_thousand is None:
                    held_at_thousand = held()
                peak_after_first_thousand = max(peak_after_first_thousand, held())
        with anyio.fail_after(60):
            while min(heard) < changes:  # noqa: ASYNC110 - every reading client heard every change
                await anyio.sleep(0.05)
        bound = IDLE * UNREAD_LIMIT + READERS * 200  # the idle ones are capped; readers hold what is in flight
        print(f"held at 1,000: {held_at_thousand}; peak after: {peak_after_first_thousand}; bound {bound}")
        assert peak_after_first_thousand <= bound
        assert held() <= READERS * 200  # the idle streams were ended, the readers hold almost nothing
