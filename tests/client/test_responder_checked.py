"""A :class:`CheckedAcceptance` skips the client's check only for the very question it names."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit.client.responder import ElicitationResponder
from elicitkit.elicitation.requests import ElicitRequest, FormRequest, Origin, parse_request
from elicitkit.elicitation.results import CheckedAcceptance
from elicitkit.protocol.errors import INTERNAL_ERROR, MCPError

pytestmark = pytest.mark.anyio
PARAMS: dict[str, Any] = {
    "message": "Who?",
    "requestedSchema": {"type": "object", "properties": {"seats": {"type": "integer"}}, "required": ["seats"]},
}


async def test_an_answer_checked_for_this_question_is_sent_as_it_is() -> None:
    async def checked(request: ElicitRequest) -> CheckedAcceptance:
        assert isinstance(request, FormRequest)
        return CheckedAcceptance(data={"seats": 3}, content={"seats": 3}, question=request)

    responder = ElicitationResponder(checked, ("form",))
    assert await responder.answer(PARAMS, version="2025-11-25", origin=Origin()) == {
        "action": "accept",
        "content": {"seats": 3},
    }


async def test_a_checked_answer_for_another_question_is_checked_again() -> None:
    other = parse_request(PARAMS)
    assert isinstance(other, FormRequest)

    async def misplaced(request: ElicitRequest) -> CheckedAcceptance:
        return CheckedAcceptance(data={"seats": "many"}, content={"seats": "many"}, question=other)

    responder = ElicitationResponder(misplaced, ("form",))
    with pytest.raises(MCPError) as raised:
        await responder.answer(PARAMS, version="2025-11-25", origin=Origin())
    assert raised.value.code == INTERNAL_ERROR
