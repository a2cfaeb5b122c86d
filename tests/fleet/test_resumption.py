"""``Last-Event-ID`` resumption of a relayed stream on every instance: the session's owner, the
instance that relayed it and a third one, while the call runs and after it finished (issue 28,
point 1: the owner used to answer 404, looking only at the streams in its own memory)."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import anyio
import pytest

from .support import fleet
from .test_failures import _events, _post, _raw_session

pytestmark = pytest.mark.anyio


async def _drop_after_first_progress(http: aiohttp.ClientSession, url: str, session_id: str, call_id: int) -> str:
    """POST a ``ticks`` call, read until its first progress event, drop the connection: that event's id."""
    call = {
        "jsonrpc": "2.0",
        "id": call_id,
        "method": "tools/call",
        "params": {"name": "ticks", "arguments": {"n": 3, "gap": 0.3}, "_meta": {"progressToken": "t"}},
    }
    resp = await _post(http, url, call, session_id)
    assert resp.headers["content-type"].startswith("text/event-stream")
    first = b""
    while b'"progress":1' not in first:
        first += await resp.content.readany()
    resp.close()
    return [i for i, _ in _events(first.decode()) if i][-1]


async def _resume(http: aiohttp.ClientSession, url: str, session_id: str, last_id: str) -> list[dict[str, Any]]:
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session_id,
               "MCP-Protocol-Version": "2025-11-25", "Last-Event-ID": last_id}  # fmt: skip
    async with http.get(url, headers=headers) as resumed:
        assert resumed.status == 200, (resumed.status, await resumed.text())
        rest = ""
        async for chunk in resumed.content.iter_any():
            rest += chunk.decode()
            if '"result"' in rest:
                break
    return [json.loads(data) for _, data in _events(rest)]


async def test_relayed_stream_resumes_on_owner_relay_and_third_before_and_after_the_end() -> None:
    with fleet() as f, anyio.fail_after(60):
        async with aiohttp.ClientSession() as http:
            session_id = await _raw_session(http, f.url)
            owner = f.owner_of(session_id)
            relay, third = [i for i in f.instances.values() if i is not owner]
            call_id = 0
            for finished in (False, True):
                for target in (owner, relay, third):
                    call_id += 1
                    last_id = await _drop_after_first_progress(http, relay.url, session_id, call_id)
                    if finished:
                        await anyio.sleep(1.5)  # the call ends meanwhile (2 more ticks of 0.3 s)
                    messages = await _resume(http, target.url, session_id, last_id)
                    notes = [m for m in messages if m.get("method") == "notifications/progress"]
                    progress = [m["params"]["progress"] for m in notes]
                    where = (target.name, "after" if finished else "during")
                    assert progress == [2, 3], where
                    assert messages[-1]["id"] == call_id, where
                    assert messages[-1]["result"]["content"][0]["text"] == f"3 ticks@{owner.name}", where
