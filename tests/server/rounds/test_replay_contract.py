"""The replay contract (issue 28, point 5): a 2026 question whose text changes between runs (a
process id, a counter) ends the call with an error that names the cause, not with the client's
"still needs input after 10 rounds"; a question that stays the same is answered as before."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from elicitkit import Client, Context, ElicitationResult, MCPError, Server
from elicitkit.protocol.errors import INTERNAL_ERROR

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


def build() -> Server:
    server = Server("replay")
    runs = itertools.count(1)

    @server.tool()
    async def drifting(ctx: Context) -> str:
        answer = await ctx.elicit(f"question from run {next(runs)}", str)
        return f"got {answer.action}"

    @server.tool()
    async def drifting_then_more(ctx: Context) -> str:
        await ctx.elicit(f"question from run {next(runs)}", str)
        answer = await ctx.elicit("and a second one", str)
        return f"got {answer.action}"

    @server.tool()
    async def steady(ctx: Context) -> str:
        answer = await ctx.elicit("the same question every run", str)
        return f"got {answer.data}"

    return server


async def _accept(request: Any) -> ElicitationResult[Any]:
    return ElicitationResult.accept({"value": "yes"})


@pytest.mark.parametrize("tool", ["drifting", "drifting_then_more"])
async def test_a_question_that_changes_between_runs_is_named_as_the_cause(tool: str) -> None:
    """``drifting`` used to take the answer to another question; ``drifting_then_more`` looped
    until TooManyInputRounds (the recorded answer never matched the next run's question)."""
    async with Client(build(), mode="modern", elicitation_callback=_accept) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool(tool, {})
        assert info.value.code == INTERNAL_ERROR
        assert "replay contract" in info.value.message and "'q1'" in info.value.message
        assert info.value.data == {"replayMismatch": "q1"}
        assert (await client.call_tool("steady", {})).text == "got yes"  # a steady question is answered
