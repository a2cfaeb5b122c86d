"""subscriptions/listen over Streamable HTTP: the ack first, only the kinds asked for, every
frame tagged with the stream's id, task statuses for the caller's tasks, and no stream left
behind once the client hangs up."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import orjson
import pytest

from elicitkit import Server
from elicitkit.protocol.tasks import EXTENSION_ID
from elicitkit.server.tasks import InMemoryTaskStore
from elicitkit.transports.http.serve import serve_http_background
from kit.raw import ACCEPT, HttpWire, Modern, headers_for, memory_wire, meta

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
SUB_ID = "io.modelcontextprotocol/subscriptionId"
EXT = meta(caps={"extensions": {EXTENSION_ID: {}}})


def build(release: anyio.Event | None = None) -> Server:
    """``release``: what ``quick`` waits for before finishing (so a listener is open by then)."""
    server = Server("listen-test", task_store=InMemoryTaskStore())

    @server.tool()
    async def touch_tools() -> str:
        await server.notify_tools_changed()
        return "ok"

    @server.tool()
    async def touch_prompts() -> str:
        await server.notify_prompts_changed()
        return "ok"

    @server.tool(task="optional")
    async def quick() -> str:
        if release is not None:
            await release.wait()
        await anyio.sleep(0.2)
        return "done"

    return server


async def frames(
    url: str, notifications: dict[str, Any], envelope: dict[str, Any], count: int
) -> AsyncIterator[dict[str, Any]]:
    body = {
        "jsonrpc": "2.0",
        "id": "sub-1",
        "method": "subscriptions/listen",
        "params": {"notifications": notifications, "_meta": envelope},
    }
    headers = {
        "Accept": ACCEPT,
        "Content-Type": "application/json",
        **headers_for("subscriptions/listen", body["params"]),
    }
    async with (
        httpx.AsyncClient(timeout=10) as client,
        client.stream("POST", url, content=orjson.dumps(body), headers=headers) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        seen = 0
        async for line in response.aiter_lines():
            if line.startswith("data:") and line[5:].strip():
                yield orjson.loads(line[5:])
                seen += 1
                if seen >= count:
                    return


async def test_listen_acks_filters_tags_and_cleans_up() -> None:
    server = build()
    async with serve_http_background(server, port=0) as handle:
        client = Modern(http_wire_for(handle.url))
        got: list[dict[str, Any]] = []
        async with anyio.create_task_group() as group:

            async def read() -> None:
                async for frame in frames(handle.url, {"promptsListChanged": True}, meta(), 2):
                    got.append(frame)

            group.start_soon(read)
            while len(server.listeners) == 0:  # noqa: ASYNC110 (polling a plain counter)
                await anyio.sleep(0.01)
            await client.call("touch_tools")  # not asked for: never on this stream
            await client.call("touch_prompts")
        assert got[0]["method"] == "notifications/subscriptions/acknowledged"
        assert got[0]["params"]["notifications"] == {"promptsListChanged": True}
        assert [f["method"] for f in got[1:]] == ["notifications/prompts/list_changed"]
        assert all(f["params"]["_meta"][SUB_ID] == "sub-1" for f in got)
        with anyio.fail_after(5):
            while len(server.listeners):  # noqa: ASYNC110 (polling a plain counter)
                await anyio.sleep(0.02)  # the client hung up: the stream is gone
    await server.tasks.aclose()


async def test_task_status_notifications_for_the_callers_tasks() -> None:
    release = anyio.Event()  # the task finishes only once the stream is open: a slow machine opens it late
    server = build(release)
    async with serve_http_background(server, port=0) as handle:
        client = Modern(http_wire_for(handle.url))
        task_id = (await client.call("quick", envelope=EXT)).result["taskId"]
        statuses = []
        with anyio.fail_after(10):
            async for frame in frames(handle.url, {"taskIds": [task_id, "not-a-task"]}, EXT, 2):
                statuses.append(frame)
                release.set()  # after the acknowledgement: the stream watches the task
        assert statuses[0]["params"]["notifications"] == {"taskIds": [task_id]}  # only what exists
        assert statuses[1]["method"] == "notifications/tasks"
        assert statuses[1]["params"]["taskId"] == task_id and statuses[1]["params"]["status"] == "completed"
        assert statuses[1]["params"]["_meta"][SUB_ID] == "sub-1"
        refused = await client.request("subscriptions/listen", {"notifications": {"taskIds": [task_id]}})
        assert refused.error["code"] == -32021  # taskIds without declaring the extension
    await server.tasks.aclose()


def http_wire_for(url: str) -> HttpWire:
    return HttpWire(httpx.AsyncClient(timeout=10), url)


async def test_listen_off_http_ends_with_cancellation_and_tags_the_request_id() -> None:
    server = build()
    async with memory_wire(server) as wire:
        listen = {
            "jsonrpc": "2.0",
            "id": 77,
            "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": meta()},
        }
        await wire.session.peer.feed(orjson.dumps(listen))
        with anyio.fail_after(5):
            while len(server.listeners) == 0:  # noqa: ASYNC110 (polling a plain counter)
                await anyio.sleep(0.01)
        await Modern(wire).call("touch_tools")
        with anyio.fail_after(5):
            while not any(m.get("method") == "notifications/tools/list_changed" for m in wire.outgoing):  # noqa: ASYNC110
                await anyio.sleep(0.01)
        frames = [m for m in wire.outgoing if str(m.get("method", "")).startswith("notifications/")]
        assert frames[0]["method"] == "notifications/subscriptions/acknowledged"
        assert all(f["params"]["_meta"][SUB_ID] == 77 for f in frames)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}}
        await wire.session.peer.feed(orjson.dumps(cancel))
        with anyio.fail_after(5):
            while len(server.listeners):  # noqa: ASYNC110 (polling a plain counter)
                await anyio.sleep(0.01)
    await server.tasks.aclose()
