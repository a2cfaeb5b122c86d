"""The non-interactive handler and the seed-000 surface (ElicitationHandler, factories, builders)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from elicitkit import AcceptedElicitation, CIHandler, Client, Context, DeclinedElicitation, ElicitationResult, Server
from elicitkit.compat import ElicitationHandler, create_form_request, create_url_request
from elicitkit.elicitation.requests import Origin

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

CONTACT = {
    "name": {"type": "string", "description": "Who to call"},
    "email": {"type": "string", "format": "email"},
    "visits": {"type": "integer", "default": 3},
}


async def test_ci_mode_fills_given_defaults_then_schema_defaults() -> None:
    handler = ElicitationHandler(ci_mode=True, ci_defaults={"name": "Ada", "email": "ada@example.org"})
    request = create_form_request("Contact details?", CONTACT, required=["name", "email"], title="Contact")
    result = await handler.elicit(request)
    assert result.action.value == "accept"
    assert result.action == "accept"
    assert result.content == {"name": "Ada", "email": "ada@example.org", "visits": 3}
    assert result.to_dict() == {"action": "accept", "content": {"name": "Ada", "email": "ada@example.org", "visits": 3}}


async def test_ci_mode_declines_with_reason_when_a_required_field_has_no_value(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = ElicitationHandler(ci_mode=True, ci_defaults={"name": "Ada"})
    request = create_form_request("Contact details?", CONTACT, required=["name", "email"])
    with caplog.at_level(logging.WARNING, logger="elicitkit.client.handlers.ci"):
        result = await handler.elicit(request)
    assert isinstance(result, DeclinedElicitation)
    assert result.action.value == "decline"
    assert result.validation_error is not None and "email" in result.validation_error
    assert any("email" in r.getMessage() and "declined" in r.getMessage() for r in caplog.records)


async def test_ci_declines_defaults_that_do_not_fit_the_form() -> None:
    handler = CIHandler({"name": "Ada", "email": "not-an-address"})
    request = create_form_request("Contact details?", CONTACT, required=["name", "email"])
    result = await handler(request)
    assert isinstance(result, DeclinedElicitation)
    assert result.reason is not None and "email" in result.reason


async def test_ci_ignores_defaults_for_fields_the_form_does_not_have() -> None:
    handler = CIHandler({"name": "Ada", "email": "ada@example.org", "unrelated": 1})
    result = await handler(create_form_request("?", CONTACT, required=["name"]))
    assert isinstance(result, AcceptedElicitation)
    assert "unrelated" not in (result.content or {})


async def test_ci_declines_url_mode() -> None:
    request = create_url_request("Authorize", "https://auth.example.com/x", elicitation_id="auth-1")
    result = await ElicitationHandler(ci_mode=True).elicit(request)
    assert result.action.value == "decline"
    assert result.to_dict()["action"] == "decline"


async def test_custom_handler_takes_over() -> None:
    seen: list[str] = []

    async def custom(request: Any) -> ElicitationResult[Any]:
        seen.append(request.mode.value)
        if request.mode.value == "form":
            return ElicitationResult.accept({"approved": True})
        return ElicitationResult.decline("URL mode not supported here")

    handler = ElicitationHandler()
    handler.set_custom_handler(custom)
    form = await handler.elicit(create_form_request("ok?", {"approved": {"type": "boolean"}}))
    url = await handler.elicit(create_url_request("go", "https://example.com/a"))
    assert seen == ["form", "url"]
    assert form.to_dict() == {"action": "accept", "content": {"approved": True}}
    assert url.to_dict() == {"action": "decline", "validationError": "URL mode not supported here"}


def test_sync_custom_handler_and_reset() -> None:
    handler = ElicitationHandler(ci_mode=True, ci_defaults={"approved": False})
    handler.set_custom_handler(lambda request: ElicitationResult.cancel())
    import anyio

    request = create_form_request("ok?", {"approved": {"type": "boolean"}}, required=["approved"])
    assert anyio.run(handler.elicit, request).to_dict() == {"action": "cancel"}
    handler.set_custom_handler(None)
    assert anyio.run(handler.elicit, request).to_dict() == {"action": "accept", "content": {"approved": False}}


def test_factories_return_the_typed_outcomes() -> None:
    accepted = ElicitationResult.accept({"confirmed": True, "value": 42})
    declined = ElicitationResult.decline("Invalid input provided")
    cancelled = ElicitationResult.cancel()
    assert isinstance(accepted, AcceptedElicitation) and accepted.content == {"confirmed": True, "value": 42}
    assert accepted.to_dict() == {"action": "accept", "content": {"confirmed": True, "value": 42}}
    assert declined.to_dict() == {"action": "decline", "validationError": "Invalid input provided"}
    assert cancelled.to_dict() == {"action": "cancel"}
    assert [r.action for r in (accepted, declined, cancelled)] == ["accept", "decline", "cancel"]
    assert [r.action.value for r in (accepted, declined, cancelled)] == ["accept", "decline", "cancel"]


def test_url_request_to_dict() -> None:
    request = create_url_request("Authorize access", "https://github.com/login/oauth/authorize?x=1", "gh-1")
    assert request.to_dict() == {
        "message": "Authorize access",
        "mode": "url",
        "url": "https://github.com/login/oauth/authorize?x=1",
        "elicitationId": "gh-1",
    }
    with pytest.raises(ValueError):
        create_url_request("x", "not a url")


class Party(BaseModel):
    name: str = Field(description="Booking name")
    size: int = Field(default=2, ge=1)


def _party_server() -> Server:
    server = Server("party")

    @server.tool()
    async def book(ctx: Context) -> str:
        answer = await ctx.elicit("Who is coming?", Party)
        match answer:
            case AcceptedElicitation(data=Party(name=name, size=size)):
                return f"booked {name} x{size}"
        return f"not booked: {answer.action}"

    return server


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_handler_answers_a_real_server_on_both_eras(mode: str) -> None:
    handler = ElicitationHandler(ci_mode=True, ci_defaults={"name": "Ada"})
    async with Client(_party_server(), mode=mode, elicitation_callback=handler) as client:  # type: ignore[arg-type]
        assert (await client.call_tool("book")).text == "booked Ada x2"
    empty = ElicitationHandler(ci_mode=True)
    async with Client(_party_server(), mode=mode, elicitation_callback=empty) as client:  # type: ignore[arg-type]
        assert (await client.call_tool("book")).text == "not booked: decline"


async def test_origin_reaches_the_handler() -> None:
    seen: list[Origin | None] = []

    async def spy(request: Any) -> ElicitationResult[Any]:
        seen.append(request.origin)
        return await CIHandler({"name": "Bo"})(request)

    async with Client(_party_server(), elicitation_callback=spy) as client:
        await client.call_tool("book")
    assert seen and seen[0] is not None and seen[0].name == "party"


# ----------------------------------------------------------------------------- repeated questions (issue 12, item 16)

BISTRO_PATH = Path(__file__).resolve().parents[3] / "examples" / "elicitation" / "bistro.py"


def _looping_server() -> Server:
    server = Server("loop")

    @server.tool()
    async def insist(ctx: Context) -> str:
        for asked in range(1, 1000):  # asks until refused, like bistro with a full default date
            answer = await ctx.elicit("Try again?", bool)
            if not (isinstance(answer, AcceptedElicitation) and answer.data):
                return f"stopped after {asked} question(s): {answer.action}"
        return "never stopped"

    return server


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_defect_16_ci_handler_declines_a_question_repeated_endlessly(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="elicitkit.client.handlers.ci"):
        async with Client(
            _looping_server(),
            mode=mode,  # type: ignore[arg-type]
            elicitation_callback=CIHandler({"value": True}),
            max_input_rounds=50,
        ) as client:
            result = await client.call_tool("insist")
    assert result.text == "stopped after 4 question(s): decline"  # 3 answers, the 4th declined
    [warning] = [r.getMessage() for r in caplog.records]
    assert warning == (
        "declined loop's question 'Try again?': the same question came 4 times in a row; answered 3 times "
        "(max_repeats), declined now so the server does not ask forever"
    )


async def test_ci_handler_max_repeats_is_configurable_and_can_be_turned_off() -> None:
    async with Client(_looping_server(), elicitation_callback=CIHandler({"value": True}, max_repeats=1)) as client:
        assert (await client.call_tool("insist")).text == "stopped after 2 question(s): decline"
    answers = CIHandler({"value": True}, max_repeats=None)
    request = create_form_request("Try again?", {"value": {"type": "boolean"}}, required=["value"])
    assert all([(await answers(request)).action == "accept" for _ in range(50)])
    with pytest.raises(ValueError, match="max_repeats must be at least 1"):
        CIHandler(max_repeats=0)


async def test_ci_handler_counts_only_identical_questions_in_a_row() -> None:
    answers = CIHandler({"value": True}, max_repeats=2)
    same = create_form_request("Again?", {"value": {"type": "boolean"}}, required=["value"])
    other = create_form_request("Other?", {"value": {"type": "boolean"}}, required=["value"])
    other_schema = create_form_request("Again?", {"value": {"type": "boolean", "default": True}})
    actions = [(await answers(request)).action.value for request in (same, same, other, same, same, other_schema)]
    assert actions == ["accept"] * 6  # never more than 2 identical in a row
    assert (await answers(other_schema)).action.value == "accept"
    assert (await answers(other_schema)).action.value == "decline"
    answers.reset()
    assert (await answers(other_schema)).action.value == "accept"


def test_defect_16_elicitkit_call_with_the_ci_ui_stops_a_looping_bistro() -> None:
    """The command of the report: defaults that re-pick a full evening end in a decline, not 977 questions."""
    with tempfile.TemporaryDirectory() as tmp:
        defaults = Path(tmp) / "defaults.json"
        defaults.write_text(json.dumps({"try_other": True}))
        server = f"{sys.executable} {BISTRO_PATH}"
        arguments = ["-a", "date=2025-12-25", "-a", "party_size=2", "--ui", "ci", "--defaults", str(defaults)]
        ran = subprocess.run(
            [sys.executable, "-m", "elicitkit.cli", "call", server, "book_table", *arguments],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert ran.stdout == "No booking made: you declined another date.\n", ran.stderr
    assert ran.returncode == 0
    assert ran.stderr == (  # the 25th answered once, the 26th three times, then declined
        "declined bistro's question 'We are full for 2 on 2025-12-26. Try another evening?': the same question "
        "came 4 times in a row; answered 3 times (max_repeats), declined now so the server does not ask forever\n"
    )
