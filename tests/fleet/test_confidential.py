"""Nothing readable in Redis (issue 28, point 4): during a run with questions, answers and
results, relayed and resumed, a scan of every key and a capture of every channel find none of
them in clear; an event changed in Redis is refused, never served."""

from __future__ import annotations

import contextlib
import json
import secrets
from typing import Any

import aiohttp
import anyio
import pytest
import redis
import redis.asyncio

from elicitkit import Client, ElicitationResult

from .support import Fleet, fleet
from .test_failures import _post, _raw_session

pytestmark = pytest.mark.anyio


def _every_value(f: Fleet) -> list[bytes]:
    """Every key's name and content, whatever its type."""
    client = redis.Redis.from_url(f.redis.url)
    found: list[bytes] = []
    try:
        for key in client.scan_iter(count=1000):
            found.append(key)
            kind = client.type(key)
            if kind == b"string":
                found.append(client.get(key) or b"")
            elif kind == b"list":
                found += client.lrange(key, 0, -1)
            elif kind == b"hash":
                for field, value in client.hgetall(key).items():
                    found += [field, value]
            elif kind == b"zset":
                found += [member for member, _ in client.zrange(key, 0, -1, withscores=True)]
            elif kind == b"set":
                found += list(client.smembers(key))
    finally:
        client.close()
    return found


async def test_nothing_readable_in_redis_and_a_changed_event_is_refused() -> None:
    secret = f"s3cr3t-{secrets.token_hex(6)}"  # answered by the person: must never be readable

    async def answer(request: Any) -> ElicitationResult[Any]:
        return ElicitationResult.accept({"value": secret})

    captured: list[tuple[bytes, bytes]] = []
    with fleet() as f, anyio.fail_after(60):
        spy = redis.asyncio.Redis.from_url(f.redis.url)
        pubsub = spy.pubsub()
        await pubsub.psubscribe("*")

        async def capture() -> None:
            async for message in pubsub.listen():
                if message["type"] == "pmessage":
                    captured.append((message["channel"], message["data"]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(capture)
            async with contextlib.AsyncExitStack() as stack:
                clients = [
                    await stack.enter_async_context(Client(f.url, mode="legacy", elicitation_callback=answer))
                    for _ in range(3)
                ]
                for n, client in enumerate(clients * 3):  # round robin: most calls and answers are relayed
                    text = (await client.call_tool("ask", {"tag": f"topic{n}"})).text
                    assert text.startswith(f"topic{n}={secret}@")
            stored = _every_value(f)
            await anyio.sleep(0.3)
            tg.cancel_scope.cancel()
        await pubsub.aclose()
        await spy.aclose()
        await _a_changed_event_is_refused(f)  # on the same fleet: one fleet start, not two
    assert len(captured) > 20 and len(stored) > 3  # the run went through Redis
    for channel, data in captured:
        for clear in (secret.encode(), b"topic", b"question", b"accept", b"elicitation/create"):
            assert clear not in data, (channel, clear, data[:200])
    for value in stored:
        for clear in (secret.encode(), b"topic", b"question", b"accept"):
            assert clear not in value, (clear, value[:200])


async def _a_changed_event_is_refused(f: Fleet) -> None:
    """A relayed stream's recorded result, changed in Redis, is not replayed on resumption."""
    with anyio.fail_after(30):
        async with aiohttp.ClientSession() as http:
            session_id = await _raw_session(http, f.url)
            owner = f.owner_of(session_id)
            relay = next(i for i in f.instances.values() if i is not owner)
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
            async with await _post(http, relay.url, call, session_id) as resp:
                assert json.loads(await resp.read())["result"]["content"][0]["text"] == owner.name
            spy = redis.asyncio.Redis.from_url(f.redis.url)
            keys = [k async for k in spy.scan_iter(match=f"elicitkit:ev:{session_id}:*")]
            assert len(keys) == 1
            [sealed] = await spy.lrange(keys[0], 0, -1)
            changed = sealed[:-1] + bytes([sealed[-1] ^ 1])
            await spy.lset(keys[0], 0, changed)
            await spy.aclose()
            stream_key = keys[0].decode().rsplit(":", 1)[1]
            headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session_id,
                       "MCP-Protocol-Version": "2025-11-25", "Last-Event-ID": f"{stream_key}/0"}  # fmt: skip
            for target in f.instances.values():
                async with http.get(target.url, headers=headers) as resumed:
                    body = (await resumed.read()).decode() if resumed.status == 200 else ""
                    assert resumed.status == 404 or '"result"' not in body, (target.name, resumed.status, body)
