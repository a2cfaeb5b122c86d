"""What a fleet does when something happens elsewhere: a URL question completed through another
instance, a stream resumed on another instance, an instance or Redis dying, a forged message."""

from __future__ import annotations

import contextlib
import functools
import json
import time
from typing import Any

import aiohttp
import anyio
import pytest
import redis.asyncio

from elicitkit import Client, ElicitationResult, MCPError
from elicitkit.backplane.signing import Signer, fleet_key

from .support import FLEET_KEY, fleet

pytestmark = pytest.mark.anyio

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def ask_into(outcome: dict[str, Any], client: Client, tag: str) -> None:
    """Call ``ask`` for ``tag``; keep its text, or the MCPError the call ended with."""
    try:
        outcome[tag] = (await client.call_tool("ask", {"tag": tag})).text
    except MCPError as exc:
        outcome[tag] = exc


async def test_url_question_completed_through_another_instance() -> None:
    """The payment webhook (here the ``confirm`` tool of another session, on another instance
    reached directly) completes the URL question; the notice reaches the paying client."""

    async def accept(request: Any) -> ElicitationResult[Any]:
        return ElicitationResult.accept()

    with fleet() as f, anyio.fail_after(30):
        async with Client(f.url, mode="legacy", elicitation_callback=accept) as payer:
            session_id = payer.transport.session_id  # type: ignore[attr-defined]
            owner = f.owner_of(session_id)
            assert (await payer.call_tool("pay", {"elicitation_id": "dep-1"})).text == f"accept {session_id}"
            assert not await payer.wait_for_elicitation_complete("dep-1", timeout=0.05)
            elsewhere = next(i for i in f.instances.values() if i is not owner)
            async with Client(elsewhere.url, mode="legacy") as webhook:
                args = {"session_id": session_id, "elicitation_id": "dep-1"}
                assert (await webhook.call_tool("confirm", args)).text == f"True@{elsewhere.name}"
                unknown = {"session_id": "no-such-session", "elicitation_id": "x"}
                assert (await webhook.call_tool("confirm", unknown)).text.startswith("False@")
            assert await payer.wait_for_elicitation_complete("dep-1", timeout=5)


async def test_broadcasts_from_another_instance_reach_every_client() -> None:
    """A list change and a resource update made on one instance reach clients of sessions held
    by the others (on their standalone GET streams), and only subscribers get the update."""
    heard: dict[str, list[str]] = {"a": [], "b": []}

    def listener(name: str) -> Any:
        def on_notification(method: str, params: Any) -> None:
            heard[name].append(method)

        return on_notification

    with fleet() as f, anyio.fail_after(30):
        async with contextlib.AsyncExitStack() as stack:
            a = await stack.enter_async_context(Client(f.url, mode="legacy", notification_callback=listener("a")))
            await a.call_tool("whoami")  # shift the round robin: b's session lands elsewhere
            b = await stack.enter_async_context(Client(f.url, mode="legacy", notification_callback=listener("b")))
            owners = {f.owner_of(c.transport.session_id).name for c in (a, b)}  # type: ignore[attr-defined]
            assert len(owners) == 2
            await a.subscribe_resource("memo://board")
            third = next(i for i in f.instances.values() if i.name not in owners)
            async with Client(third.url, mode="legacy") as trigger:
                assert (await trigger.call_tool("announce")).text == third.name
            with anyio.fail_after(5):
                while not (  # noqa: ASYNC110 - a poll with a deadline
                    "notifications/resources/updated" in heard["a"] and "notifications/tools/list_changed" in heard["b"]
                ):
                    await anyio.sleep(0.05)
            assert "notifications/tools/list_changed" in heard["a"]
            assert "notifications/resources/updated" not in heard["b"]  # b did not subscribe


async def _post(http: aiohttp.ClientSession, url: str, body: dict[str, Any], session_id: str | None = None) -> Any:
    headers = dict(
        HEADERS, **({"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"} if session_id else {})
    )
    return await http.post(url, data=json.dumps(body), headers=headers)


async def _raw_session(http: aiohttp.ClientSession, url: str) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }
    async with await _post(http, url, init) as resp:
        session_id = resp.headers["mcp-session-id"]
        await resp.read()
    async with await _post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id) as resp:
        assert resp.status == 202
    return session_id


def _events(text: str) -> list[tuple[str | None, str]]:
    """(id, data) of each SSE event with data."""
    found = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event_id, data = None, []
        for line in block.split("\n"):
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data and data != [""]:
            found.append((event_id, "\n".join(data)))
    return found


@pytest.mark.parametrize("answered_by", ["owner", "relay"])
async def test_resume_with_last_event_id_on_another_instance(answered_by: str) -> None:
    """A call's SSE stream drops after its first event; GET with Last-Event-ID on another instance
    brings the rest: every progress event once, then the result. ``owner``: the call went to the
    owner itself (its stream was never recorded: the owner publishes it from memory on demand);
    ``relay``: it went through another instance (its events are in Redis) and the GET goes to a third."""
    with fleet() as f, anyio.fail_after(30):
        async with aiohttp.ClientSession() as http:
            session_id = await _raw_session(http, f.url)
            owner = f.owner_of(session_id)
            others = [i for i in f.instances.values() if i is not owner]
            post_to, get_from = (owner, others[0]) if answered_by == "owner" else (others[0], others[1])
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "ticks", "arguments": {"n": 4, "gap": 0.3}, "_meta": {"progressToken": "t"}},
            }
            resp = await _post(http, post_to.url, call, session_id)
            assert resp.headers["content-type"].startswith("text/event-stream")
            first = b""
            while b'"progress":1' not in first:
                first += await resp.content.readany()
            resp.close()  # the connection drops mid-call
            seen = _events(first.decode())
            last_id = [i for i, _ in seen if i][-1]
            get_headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session_id,
                           "MCP-Protocol-Version": "2025-11-25", "Last-Event-ID": last_id}  # fmt: skip
            async with http.get(get_from.url, headers=get_headers) as resumed:
                assert resumed.status == 200
                rest = ""
                async for chunk in resumed.content.iter_any():
                    rest += chunk.decode()
                    if '"result"' in rest:
                        break
            unknown = dict(get_headers, **{"Last-Event-ID": "nosuchstream/3"})
            async with http.get(get_from.url, headers=unknown) as refused:
                assert refused.status == 404
    messages = [json.loads(data) for _, data in [*seen, *_events(rest)]]
    progress = [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"]
    assert progress == [1, 2, 3, 4]
    assert messages[-1]["id"] == 1 and messages[-1]["result"]["content"][0]["text"] == f"4 ticks@{owner.name}"


async def test_owner_dies_mid_question_others_go_on() -> None:
    """Kill the instance that owns session A while A and B wait on questions: A's call fails with
    an error and A starts a new session that works; B (owned elsewhere) is answered as usual."""
    release = anyio.Event()
    asked: dict[str, anyio.Event] = {"a": anyio.Event(), "b": anyio.Event()}

    async def answer(request: Any) -> ElicitationResult[Any]:
        asked[request.message.removeprefix("question ")[0]].set()
        await release.wait()
        return ElicitationResult.accept({"value": "ok"})

    with fleet() as f, anyio.fail_after(60):
        async with contextlib.AsyncExitStack() as stack:
            a = await stack.enter_async_context(Client(f.url, mode="legacy", elicitation_callback=answer))
            await a.call_tool("whoami")  # shift the round robin: b's initialize lands elsewhere
            b = await stack.enter_async_context(Client(f.url, mode="legacy", elicitation_callback=answer))
            owner_a = f.owner_of(a.transport.session_id)  # type: ignore[attr-defined]
            if f.owner_of(b.transport.session_id) is owner_a:  # type: ignore[attr-defined]
                pytest.fail("both sessions landed on one instance; the round robin should spread them")
            outcome: dict[str, Any] = {}
            call = functools.partial(ask_into, outcome)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, a, "a1")
                tg.start_soon(call, b, "b1")
                await asked["a"].wait()
                await asked["b"].wait()
                owner_a.kill()
                with anyio.fail_after(20):
                    while "a1" not in outcome:  # noqa: ASYNC110 - a poll with a deadline
                        await anyio.sleep(0.05)
                release.set()
            assert isinstance(outcome["a1"], MCPError), outcome["a1"]
            assert outcome["b1"].startswith("b1=ok@")
            # A's next call: 404 -> a new session on a live instance, and it works
            text = (await a.call_tool("ask", {"tag": "a2"})).text
            assert text.startswith("a2=ok@") and not text.endswith(owner_a.name)


async def test_a_relaying_instance_dies_nothing_lost() -> None:
    """Kill an instance that owns none of the waiting sessions: every question still gets its
    answer to its call (streams it relayed resume elsewhere, answers are sent elsewhere)."""
    release = anyio.Event()
    count = 0

    async def answer(request: Any) -> ElicitationResult[Any]:
        nonlocal count
        count += 1
        await release.wait()
        return ElicitationResult.accept({"value": request.message.removeprefix("question ")})

    with fleet() as f, anyio.fail_after(60):
        async with contextlib.AsyncExitStack() as stack:
            clients = []
            for _ in range(4):  # initialize lands on the same instance each time (3 requests per client)
                clients.append(
                    await stack.enter_async_context(Client(f.url, mode="legacy", elicitation_callback=answer))
                )
            owners = {f.owner_of(c.transport.session_id).name for c in clients}  # type: ignore[attr-defined]
            victim = next(i for name, i in f.instances.items() if name not in owners)
            results: dict[str, str] = {}

            async def call(client: Client, tag: str) -> None:
                results[tag] = (await client.call_tool("ask", {"tag": tag})).text

            async with anyio.create_task_group() as tg:
                for index, client in enumerate(clients):
                    for n in range(6):
                        tg.start_soon(call, client, f"{index}.{n}")
                while count < 24:  # noqa: ASYNC110 - a poll with a deadline
                    await anyio.sleep(0.02)
                victim.kill()
                await anyio.sleep(0.5)
                release.set()
    assert len(results) == 24
    assert all(text.startswith(f"{tag}={tag}@") for tag, text in results.items())


async def test_redis_restart_fails_calls_in_flight_cleanly_then_works() -> None:
    release = anyio.Event()

    async def answer(request: Any) -> ElicitationResult[Any]:
        await release.wait()
        return ElicitationResult.accept({"value": "ok"})

    with fleet() as f, anyio.fail_after(60):
        async with contextlib.AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(Client(f.url, mode="legacy", elicitation_callback=answer))
                for _ in range(2)
            ]
            outcome: dict[str, Any] = {}
            call = functools.partial(ask_into, outcome)

            async with anyio.create_task_group() as tg:
                for index, client in enumerate(clients):
                    for n in range(3):
                        tg.start_soon(call, client, f"{index}.{n}")
                await anyio.sleep(1.0)
                f.redis.stop()
                await anyio.sleep(0.5)
                f.redis.start()
                release.set()
                with anyio.fail_after(20):  # every call in flight ends: answered, or a clean error
                    while len(outcome) < 6:  # noqa: ASYNC110 - a poll with a deadline
                        await anyio.sleep(0.05)
            for tag, result in outcome.items():  # every call in flight ended with an error that says why
                assert isinstance(result, MCPError), (tag, result)
                assert "lost its shared store" in result.message, (tag, result.message)
            await anyio.sleep(1.0)  # heartbeats register the instances and their sessions again
            release = anyio.Event()
            release.set()
            for index, client in enumerate(clients):
                for n in range(3):
                    text = (await client.call_tool("ask", {"tag": f"new{index}.{n}"})).text
                    assert text.startswith(f"new{index}.{n}=ok@")


async def test_a_forged_answer_is_dropped() -> None:
    """Someone who can publish on Redis but lacks the fleet key cannot answer a question: the
    forged response is dropped, the real answer still lands."""
    release = anyio.Event()
    asked = anyio.Event()
    request_ids: list[Any] = []

    async def answer(request: Any) -> ElicitationResult[Any]:
        asked.set()
        await release.wait()
        return ElicitationResult.accept({"value": "genuine"})

    with fleet() as f, anyio.fail_after(30):
        async with Client(f.url, mode="legacy", elicitation_callback=answer) as client:
            session_id = client.transport.session_id  # type: ignore[attr-defined]
            owner = f.owner_of(session_id)
            result: dict[str, str] = {}

            async def call() -> None:
                result["text"] = (await client.call_tool("ask", {"tag": "x"})).text

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await asked.wait()
                r = redis.asyncio.Redis.from_url(f.redis.url)
                channel = f"elicitkit:inbox:{owner.name}".encode()
                for request_id in range(0, 5):  # the server's elicitation/create ids are small integers
                    forged = {
                        "k": "feed",
                        "sid": session_id,
                        "body": {"jsonrpc": "2.0", "id": request_id,
                                 "result": {"action": "accept", "content": {"value": "forged"}}},
                        "t": time.time(),
                        "n": f"n{request_id}",
                    }  # fmt: skip
                    body = json.dumps(forged).encode()
                    wrong_key = Signer(fleet_key("not-the-fleet-key")).seal(channel, body)
                    assert await r.publish(channel, wrong_key) == 1  # delivered to the owner, who drops it
                    request_ids.append(request_id)
                await r.aclose()
                await anyio.sleep(0.5)
                assert "text" not in result
                release.set()
            assert result["text"] == "x=genuine@" + owner.name
    # and the right key would have been accepted: the MAC is the only thing that differed
    assert Signer(fleet_key(FLEET_KEY)).open(channel, Signer(fleet_key(FLEET_KEY)).seal(channel, body)) == body
