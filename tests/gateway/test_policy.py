"""Policy at the gateway, per backend (the client's Policy reused): the sensitive-field guard, URL
domains, a rate limit, the audit log, and a backend that may not ask at all."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from elicitkit import Client, MCPError
from elicitkit.gateway import Gateway, parse_config

from .support import BACKEND, Person

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

HOSTS = {"2025-11-25": {}, "2026-07-28": {"mode": "modern"}}


def backend(name: str, mode: str, **policy: object) -> dict[str, object]:
    return {
        "name": name,
        "command": [sys.executable, str(BACKEND)],
        "namespace": f"{name}.",
        "mode": mode,
        "policy": policy,
    }


@pytest.fixture(scope="module")
async def gateway(state: Path) -> AsyncIterator[Gateway]:
    audit = str(state / "audit.jsonl")
    config = parse_config(
        {
            "backends": [
                backend("guarded", "legacy", audit=audit, deny_url_domains=["auth.example.com"]),
                backend("guarded26", "modern", audit=audit, allow_url_domains=["*.example.org"]),
                backend("mute", "legacy", elicitation=False),
                backend("mute26", "modern", elicitation=False),
                backend("limited", "legacy", rate_per_minute=1, burst=1),
                backend("open", "legacy", sensitive_fields=False),
            ]
        }
    )
    async with Gateway(config).running() as running:
        yield running


@pytest.mark.parametrize("era", list(HOSTS))
async def test_a_form_that_fishes_for_a_secret_never_reaches_the_host(gateway: Gateway, era: str) -> None:
    person = Person()
    async with Client(gateway, elicitation_callback=person, **HOSTS[era]) as client:
        guarded = await client.call_tool("guarded.login")
        guarded26 = await client.call_tool("guarded26.login")
    assert person.asked == []
    # 2025 backend: the refusal is an error for its question (its tool says so); 2026: a decline
    assert guarded.is_error and "look like secrets" in guarded.text
    assert guarded26.text == "login: decline"


async def test_the_guard_can_be_switched_off_per_backend(gateway: Gateway) -> None:
    class Typist(Person):
        async def __call__(self, request):  # type: ignore[no-untyped-def]
            self.asked.append(request)
            from elicitkit import ElicitationResult

            return ElicitationResult.accept({"user": "ada", "password": "hunter2"})

    person = Typist()
    async with Client(gateway, elicitation_callback=person) as client:
        result = await client.call_tool("open.login")
    assert result.text == "login: accept" and len(person.asked) == 1


@pytest.mark.parametrize("era", list(HOSTS))
async def test_url_domains_allowed_and_denied(gateway: Gateway, era: str) -> None:
    person = Person()
    async with Client(gateway, elicitation_callback=person, **HOSTS[era]) as client:
        denied = await client.call_tool("guarded.connect")
        not_allowed = await client.call_tool("guarded26.connect")
        booked = await client.call_tool("guarded.book")
    assert (denied.text, not_allowed.text) == ("connect: decline", "connect: decline")
    assert person.urls() == [] and booked.text == "booked 3 for Ada"


async def test_a_backend_without_elicitation_cannot_ask(gateway: Gateway) -> None:
    person = Person()
    async with Client(gateway, elicitation_callback=person) as client:
        mute = await client.call_tool("mute.book")
        with pytest.raises(MCPError) as raised:  # 2026: the backend's -32021, naming the backend
            await client.call_tool("mute26.book")
    assert person.asked == []
    assert mute.is_error and "cannot be asked" in mute.text
    assert raised.value.code == -32021 and "backend 'mute26'" in raised.value.message


async def test_a_rate_limit_declines_past_the_burst(gateway: Gateway) -> None:
    person = Person()
    async with Client(gateway, elicitation_callback=person) as client:
        first = await client.call_tool("limited.book")
        second = await client.call_tool("limited.book")
    assert first.text == "booked 3 for Ada"
    assert second.text == "no booking (decline)" and len(person.asked) == 1


async def test_the_audit_log_has_every_question_and_no_answer(gateway: Gateway, state: Path) -> None:
    async with Client(gateway, elicitation_callback=Person()) as client:
        await client.call_tool("guarded.book")
    entries = [json.loads(line) for line in (state / "audit.jsonl").read_text().splitlines()]
    actions = {(e.get("message"), e.get("action")) for e in entries}
    assert ("Who is booking?", "accept") in actions
    assert ("Your password, please.", "refused") in actions
    assert "Ada" not in (state / "audit.jsonl").read_text()  # answers stay out of the log
