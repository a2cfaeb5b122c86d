"""One answer, one validation on each side, on every era (docs/architecture.md, "Answer in").

The client checks what its person answered before sending it; the server checks what arrived
before the tool sees it; building the tool's model from the checked answer converts and does not
judge again. A call stack tells the two sides apart (both run in this process, in memory).
"""

from __future__ import annotations

import collections
import traceback
from typing import Any

import pytest
from pydantic import BaseModel

import elicitkit.elicitation.answers as answers
from elicitkit import AcceptedElicitation, Client, Context, ElicitationResult, Server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]
ERAS = [("legacy", "2025-06-18"), ("legacy", "2025-11-25"), ("modern", "2026-07-28")]


class Guest(BaseModel):
    name: str
    party: int


def _side() -> str:
    files = [frame.filename for frame in traceback.extract_stack()]
    if any("/elicitkit/client/" in f for f in files):
        return "client"
    return "server" if any("/elicitkit/server/" in f for f in files) else "elsewhere"


@pytest.mark.parametrize(
    ("mode", "version"), [("legacy", "2025-06-18"), ("legacy", "2025-11-25"), ("modern", "2026-07-28")]
)
async def test_each_side_validates_an_answer_once(monkeypatch: pytest.MonkeyPatch, mode: str, version: str) -> None:
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    check = answers.validate_answer

    def counted_check(*args: Any, **kwargs: Any) -> Any:
        counts["schema", _side()] += 1
        return check(*args, **kwargs)

    def counted_model(cls: type[Guest], *args: Any, **kwargs: Any) -> Any:
        counts["pydantic", _side()] += 1
        return BaseModel.model_validate.__func__(cls, *args, **kwargs)  # type: ignore[attr-defined]

    monkeypatch.setattr(answers, "validate_answer", counted_check)
    monkeypatch.setattr(Guest, "model_validate", classmethod(counted_model))

    server = Server("once")

    @server.tool()
    async def seat(ctx: Context) -> str:
        answer = await ctx.elicit("Who is coming?", Guest)
        assert isinstance(answer, AcceptedElicitation)
        assert isinstance(answer.data, Guest)
        return f"{answer.data.name} x{answer.data.party}"

    async def person(request: Any) -> ElicitationResult[Any]:
        return ElicitationResult.accept({"name": "Ann", "party": 2})

    async with Client(server, mode=mode, protocol_version=version, elicitation_callback=person) as client:
        result = await client.call_tool("seat", {})
    assert result.content[0].text == "Ann x2"  # type: ignore[union-attr]
    assert counts == {("schema", "client"): 1, ("schema", "server"): 1}
