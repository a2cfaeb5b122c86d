"""300 legacy (2025-11-25) questions through a round-robin balancer, answered in random order:
every answer reaches its own call, on JSON and on SSE answers; the official client too."""

from __future__ import annotations

import contextlib
import random
from typing import Any

import anyio
import mcp
import pytest
from mcp import types as mcp_types

from elicitkit import Client, ElicitationResult

from .support import fleet

pytestmark = pytest.mark.anyio

SESSIONS = 10
PER_SESSION = 30


class ParkedUser:
    """Keeps every question waiting until all have arrived, then answers them in random order."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.waiting: dict[str, anyio.Event] = {}
        self.all_asked = anyio.Event()

    async def answer(self, tag: str) -> str:
        assert tag not in self.waiting, f"question {tag} asked twice"
        event = self.waiting[tag] = anyio.Event()
        if len(self.waiting) == self.expected:
            self.all_asked.set()
        await event.wait()
        return f"v{tag}"

    async def release_in_random_order(self) -> None:
        await self.all_asked.wait()
        tags = list(self.waiting)
        random.shuffle(tags)
        for tag in tags:
            self.waiting[tag].set()
            await anyio.sleep(0.001)


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
async def test_300_questions_answered_in_random_order(sse: bool) -> None:
    user = ParkedUser(SESSIONS * PER_SESSION)
    results: dict[str, str] = {}

    async def callback(request: Any) -> ElicitationResult[Any]:
        tag = request.message.removeprefix("question ")
        return ElicitationResult.accept({"value": await user.answer(tag)})

    async def one_session(client: Client, index: int) -> None:
        owner = f.owner_of(client.transport.session_id).name  # type: ignore[attr-defined]

        async def call(tag: str) -> None:
            results[tag] = (await client.call_tool("ask", {"tag": tag})).text
            assert results[tag] == f"{tag}=v{tag}@{owner}"

        async with anyio.create_task_group() as tg:
            for n in range(PER_SESSION):
                tg.start_soon(call, f"{index}.{n}")

    with fleet(sse=sse) as f, anyio.fail_after(90):
        async with contextlib.AsyncExitStack() as stack:
            clients = []
            for index in range(SESSIONS):
                client = Client(f.url, mode="legacy", elicitation_callback=callback)
                clients.append(await stack.enter_async_context(client))
                for _ in range(index % 2):  # shift the round robin, so the next initialize lands elsewhere
                    await client.call_tool("whoami")
            owners = {f.owner_of(c.transport.session_id).name for c in clients}  # type: ignore[attr-defined]
            assert len(owners) > 1, "the balancer should spread sessions over instances"
            async with anyio.create_task_group() as tg:
                tg.start_soon(user.release_in_random_order)
                for index, client in enumerate(clients):
                    tg.start_soon(one_session, client, index)
    assert len(results) == SESSIONS * PER_SESSION


async def test_the_official_client_through_the_balancer() -> None:
    """The official SDK's client: 20 questions on one session, answered out of order."""
    user = ParkedUser(20)

    async def callback(context: Any, params: Any) -> mcp_types.ElicitResult:
        tag = params.message.removeprefix("question ")
        return mcp_types.ElicitResult(action="accept", content={"value": await user.answer(tag)})

    with fleet() as f, anyio.fail_after(60):
        async with mcp.Client(f.url, mode="legacy", elicitation_callback=callback) as client:
            texts: dict[str, str] = {}

            async def call(tag: str) -> None:
                result = await client.call_tool("ask", {"tag": tag})
                block = result.content[0]
                assert isinstance(block, mcp_types.TextContent)
                texts[tag] = block.text

            async with anyio.create_task_group() as tg:
                tg.start_soon(user.release_in_random_order)
                for n in range(20):
                    tg.start_soon(call, str(n))
    assert len(texts) == 20
    owners = {text.rpartition("@")[2] for text in texts.values()}
    assert len(owners) == 1  # one session, one owner, wherever each request landed
    assert all(text.startswith(f"{tag}=v{tag}@") for tag, text in texts.items())
