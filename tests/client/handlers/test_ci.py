"""The non-interactive handler and the seed-000 surface (ElicitationHandler, factories, builders)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import BaseModel, Field

from elicitkit import (
    AcceptedElicitation,
    CIHandler,
    Client,
    Context,
    DeclinedElicitation,
    ElicitationHandler,
    ElicitationResult,
    Server,
    create_form_request,
    create_url_request,
)
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
