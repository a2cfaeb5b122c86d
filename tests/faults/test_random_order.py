"""200 questions parked on one server at once, answered in random order (stdio and HTTP).

Driven by the real :class:`elicitkit.Client`: its elicitation callback parks every question
until all have arrived, then the test releases them in a shuffled order. Each answer must reach
its own call (the value is derived from the call's tag) and each tool must see it once.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from elicitkit import AcceptedElicitation, Client
from elicitkit.elicitation import ElicitRequest

from ._support import SERVER, server_env, tag_of

pytestmark = pytest.mark.anyio

PARKED = 200


def _value(tag: str) -> int:
    return int(tag.removeprefix("q-")) * 7 + 3


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_parked_questions_answered_in_random_order(transport: str, url: str) -> None:
    arrived: dict[str, anyio.Event] = {}
    release: dict[str, anyio.Event] = {f"q-{i}": anyio.Event() for i in range(PARKED)}
    all_in = anyio.Event()

    async def park(request: ElicitRequest) -> Any:
        tag = tag_of({"params": {"message": request.message}})
        assert tag not in arrived, f"{tag} asked twice"
        arrived[tag] = anyio.Event()
        if len(arrived) == PARKED:
            all_in.set()
        await release[tag].wait()
        return AcceptedElicitation(data=None, content={"value": _value(tag)})

    target: Any = [sys.executable, str(SERVER), "stdio"] if transport == "stdio" else url
    options = {"env": server_env()} if transport == "stdio" else {}
    results: dict[str, str] = {}
    async with Client(target, elicitation_callback=park, timeout=60, transport_options=options) as client:
        await client.call_tool("outcomes", {})

        async def one(tag: str) -> None:
            result = await client.call_tool("ask", {"tag": tag})
            results[tag] = result.content[0].text  # type: ignore[union-attr]

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for tag in release:
                    tg.start_soon(one, tag)
                await all_in.wait()
                order = list(release)
                random.Random(2026).shuffle(order)
                for tag in order:
                    release[tag].set()
                    await anyio.lowlevel.checkpoint()
        recorded = (await client.call_tool("outcomes", {})).structured_content
    assert results == {tag: f"accept:{_value(tag)}" for tag in release}
    assert recorded == {tag: [f"accept:{_value(tag)}"] for tag in release}
