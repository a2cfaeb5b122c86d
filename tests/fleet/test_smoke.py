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
