"""A first look: one client through the balancer; each request lands on another instance."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from elicitkit import Client, ElicitationResult

from .support import fleet

pytestmark = pytest.mark.anyio


async def test_calls_and_a_question_through_the_balancer() -> None:
    async def answer(request: Any) -> ElicitationResult[Any]:
        return ElicitationResult.accept({"value": "yes"})

    with fleet() as f, anyio.fail_after(30):
        async with Client(f.url, mode="legacy", elicitation_callback=answer) as client:
            seen = {(await client.call_tool("whoami")).text for _ in range(6)}
            assert seen == {"i0"} or len(seen) == 1  # every call runs on the owner
            owner = f.owner_of(client.transport.session_id)  # type: ignore[attr-defined]
            assert seen == {owner.name}
            for n in range(6):
                result = await client.call_tool("ask", {"tag": str(n)})
                assert result.text == f"{n}=yes@{owner.name}"


async def test_delete_from_another_instance_ends_the_session() -> None:
    import aiohttp
    import redis

    with fleet() as f, anyio.fail_after(30):
        async with Client(f.url, mode="legacy") as client:
            session_id = client.transport.session_id  # type: ignore[attr-defined]
            owner = f.owner_of(session_id)
            other = next(i for i in f.instances.values() if i is not owner)
            headers = {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}
            async with aiohttp.ClientSession() as http:
                async with http.delete(other.url, headers=headers) as resp:
                    assert resp.status == 200
                registry = redis.Redis.from_url(f.redis.url)
                with anyio.fail_after(5):
                    while registry.exists(f"elicitkit:sess:{session_id}"):  # noqa: ASYNC110
                        await anyio.sleep(0.05)
                registry.close()
                ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
                post_headers = {**headers, "Accept": "application/json, text/event-stream"}
                for instance in f.instances.values():  # gone everywhere, owner included
                    async with http.post(instance.url, json=ping, headers=post_headers) as resp:
                        assert resp.status == 404
                async with http.delete(other.url, headers=headers) as resp:
                    assert resp.status == 404


async def test_elicitkit_serve_with_redis_joins_a_fleet() -> None:
    """What a user runs: ``elicitkit serve MODULE:SERVER --transport http --redis URL`` twice."""
    import contextlib
    import os
    import sys
    from pathlib import Path

    from kit.fleet import redis_server, round_robin
    from kit.processes import serve_on_free_port

    from .support import FLEET_KEY

    app = Path(__file__).with_name("app.py")

    async def answer(request: Any) -> ElicitationResult[Any]:
        return ElicitationResult.accept({"value": "cli"})

    with redis_server() as rs, contextlib.ExitStack() as stack:
        env = {k: v for k, v in os.environ.items() if k != "ELICITKIT_REDIS_URL"}
        env["ELICITKIT_FLEET_KEY"] = FLEET_KEY
        cli = [sys.executable, "-m", "elicitkit.cli", "serve", f"{app}:server", "--transport", "http"]
        ports = [
            stack.enter_context(
                serve_on_free_port(lambda p: [*cli, "--port", str(p), "--redis", rs.url], f"cli {n}", env=env)
            )[0]
            for n in range(2)
        ]
        balancer = stack.enter_context(round_robin(ports))
        with anyio.fail_after(30):
            async with Client(balancer.url, mode="legacy", elicitation_callback=answer) as client:
                for n in range(4):  # the calls and the answers land on both instances
                    assert (await client.call_tool("ask", {"tag": str(n)})).text.startswith(f"{n}=cli@")
