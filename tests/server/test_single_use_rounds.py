"""Issue 12 #19 over the wire: a 2026 retry replayed with the same requestState.

By default it runs the tool again (the spec allows replays within the TTL, and docs/modern.md says
so next to the replay contract); with single-use rounds the replay is refused, so the side
effect after the question happens once.
"""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit import Client, Context, ElicitationResult, KeyRing, MCPError, Server
from elicitkit.client.rounds import InputRequiredResult
from elicitkit.protocol.errors import INVALID_PARAMS
from elicitkit.server.rounds import AeadStateCodec, SpentStates

pytestmark = pytest.mark.anyio


def payment_server(single_use: bool) -> tuple[Server, list[int]]:
    codec = AeadStateCodec(KeyRing.generate(), spent=SpentStates() if single_use else None)
    server = Server("payments", state_codec=codec)
    paid: list[int] = []

    @server.tool()
    async def pay(amount: int, ctx: Context) -> str:
        answer = await ctx.elicit(f"Pay {amount} EUR?", bool)
        if answer.accepted and answer.data:
            paid.append(amount)  # the side effect after the last question
            return "paid"
        return "not paid"

    return server, paid


async def yes(request: Any) -> ElicitationResult[Any]:
    return ElicitationResult.accept({"value": True})


async def replay_twice(server: Server) -> tuple[Any, BaseException | Any]:
    async with Client(server, mode="modern", elicitation_callback=yes) as client:
        pending = await client.call_tool("pay", {"amount": 5}, input_required="return")
        assert isinstance(pending, InputRequiredResult)
        responses = {key: {"action": "accept", "content": {"value": True}} for key in pending.input_requests}
        first = await client.resume(pending, responses)
        try:
            second: Any = await client.resume(pending, responses)
        except MCPError as exc:
            second = exc
        return first, second


async def test_defect_19_by_default_a_replayed_retry_runs_the_tool_again() -> None:
    server, paid = payment_server(single_use=False)
    first, second = await replay_twice(server)
    assert first["content"][0]["text"] == "paid"
    assert second["content"][0]["text"] == "paid"
    assert paid == [5, 5]


async def test_defect_19_single_use_rounds_refuse_the_replay() -> None:
    server, paid = payment_server(single_use=True)
    first, second = await replay_twice(server)
    assert first["content"][0]["text"] == "paid"
    assert isinstance(second, MCPError) and second.code == INVALID_PARAMS
    assert paid == [5]
