"""Policy: rate limit per server, pending cap, server allow/deny, sensitive-field guard, audit log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from elicitkit import CIHandler, Client, Context, ElicitationResult, Policy, Server
from elicitkit.client.handlers import AuditLog, RateLimit, SensitiveFieldGuard
from elicitkit.compat import create_form_request, create_url_request
from elicitkit.elicitation.requests import ElicitRequest, Origin
from elicitkit.errors import ElicitationFailed, QuestionRefused

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

BOOL_FORM = {"ok": {"type": "boolean"}}


def _asked_by(request: Any, name: str, location: str = "stdio:server") -> Any:
    from dataclasses import replace

    return replace(request, origin=Origin(name=name, location=location))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_question_after_the_burst_is_declined_until_the_bucket_refills() -> None:
    clock = Clock()
    policy = Policy(CIHandler({"ok": True}, max_repeats=None), rate_limit=RateLimit(per_minute=6, burst=3), clock=clock)
    request = _asked_by(create_form_request("ok?", BOOL_FORM), "chatty")
    results = [await policy(request) for _ in range(4)]
    assert [r.action for r in results] == ["accept", "accept", "accept", "decline"]
    assert isinstance(results[3], ElicitationResult) and "rate limit" in (results[3].to_dict()["validationError"])
    clock.now += 9.0  # 6/minute: one new question every 10 s
    assert (await policy(request)).action == "decline"
    clock.now += 1.5
    assert (await policy(request)).action == "accept"


async def test_rate_limits_are_per_server() -> None:
    policy = Policy(
        CIHandler({"ok": True}, max_repeats=None), rate_limit=RateLimit(per_minute=1, burst=1), clock=Clock()
    )
    form = create_form_request("ok?", BOOL_FORM)
    assert (await policy(_asked_by(form, "a"))).action == "accept"
    assert (await policy(_asked_by(form, "a"))).action == "decline"
    assert (await policy(_asked_by(form, "b"))).action == "accept"
    assert (await policy(_asked_by(form, "a", location="http://other/mcp"))).action == "accept"


async def test_pending_cap_declines_while_questions_wait() -> None:
    release = anyio.Event()

    async def slow(request: ElicitRequest) -> ElicitationResult[Any]:
        await release.wait()
        return ElicitationResult.accept({"ok": True})

    policy = Policy(slow, max_pending=2)
    request = create_form_request("ok?", BOOL_FORM)
    outcomes: list[str] = []

    async def ask() -> None:
        outcomes.append((await policy(request)).action)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        tg.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        third = await policy(request)  # the third while two are pending
        assert third.action == "decline"
        assert "too many questions pending" in third.to_dict()["validationError"]
        release.set()
    assert outcomes == ["accept", "accept"]
    assert policy.pending == 0


async def test_server_allow_and_deny_lists() -> None:
    policy = Policy(
        CIHandler({"ok": True}, max_repeats=None), allow_servers=["trusted-*"], deny_servers=["trusted-but-not-*"]
    )
    form = create_form_request("ok?", BOOL_FORM)
    assert (await policy(_asked_by(form, "trusted-files"))).action == "accept"
    assert (await policy(_asked_by(form, "random"))).action == "decline"
    assert (await policy(_asked_by(form, "trusted-but-not-this"))).action == "decline"


@pytest.mark.parametrize(
    "name, prop",
    [
        ("password", {"type": "string"}),
        ("apiKey", {"type": "string"}),
        ("api_key", {"type": "string"}),
        ("github_token", {"type": "string"}),
        ("client_secret", {"type": "string"}),
        ("card", {"type": "string", "title": "Credit card number"}),
        ("cvv", {"type": "string"}),
        ("ssn", {"type": "string"}),
        ("id_number", {"type": "string", "description": "Your social security number"}),
        ("pin", {"type": "integer"}),
    ],
)
async def test_sensitive_fields_are_refused_with_a_pointer_to_url_mode(name: str, prop: dict[str, Any]) -> None:
    called: list[ElicitRequest] = []

    async def handler(request: ElicitRequest) -> ElicitationResult[Any]:
        called.append(request)
        return ElicitationResult.cancel()

    policy = Policy(handler)
    with pytest.raises(QuestionRefused) as refused:
        await policy(create_form_request("Log in", {"user": {"type": "string"}, name: prop}))
    assert "URL mode" in refused.value.message
    assert refused.value.data == {"reason": "sensitive_fields", "fields": [name], "useMode": "url"}
    assert called == []


@pytest.mark.parametrize("name", ["username", "email", "party_size", "date", "tokenizer_model_name_x"])
def test_ordinary_fields_pass_the_guard(name: str) -> None:
    guard = SensitiveFieldGuard()
    assert guard.sensitive_fields(create_form_request("?", {name: {"type": "string"}})) == []


async def test_guard_is_configurable() -> None:
    form = create_form_request("Log in", {"password": {"type": "string"}})
    allowed = Policy(
        CIHandler({"password": "hunter2"}), sensitive_fields=SensitiveFieldGuard(allow=frozenset({"password"}))
    )
    assert (await allowed(form)).action == "accept"
    off = Policy(CIHandler({"password": "hunter2"}), sensitive_fields=False)
    assert (await off(form)).action == "accept"
    custom = Policy(CIHandler({"nickname": "x"}), sensitive_fields=SensitiveFieldGuard(patterns=(r"nick",)))
    with pytest.raises(QuestionRefused):
        await custom(create_form_request("?", {"nickname": {"type": "string"}}))


async def test_audit_log_has_one_line_per_question_and_no_answers(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    policy = Policy(
        CIHandler({"ok": True}, max_repeats=None),
        rate_limit=RateLimit(per_minute=60, burst=2),
        audit=AuditLog(log),
        clock=Clock(),
    )
    form = _asked_by(create_form_request("Proceed?", BOOL_FORM), "deployer")
    for _ in range(3):
        await policy(form)
    await policy(_asked_by(create_url_request("Authorize", "https://auth.example.com/x"), "deployer"))
    with pytest.raises(QuestionRefused):
        await policy(_asked_by(create_form_request("Key?", {"api_key": {"type": "string"}}), "deployer"))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["action"] for e in lines] == ["accept", "accept", "decline", "decline", "refused"]
    assert [e["mode"] for e in lines] == ["form", "form", "form", "url", "form"]
    assert all(e["server"] == "deployer" for e in lines)
    assert lines[0]["message"] == "Proceed?" and lines[0]["fields"] == ["ok"]
    assert "rate limit" in lines[2]["reason"]
    assert lines[3]["url"] == "https://auth.example.com/x"
    assert all("content" not in e for e in lines)


async def test_audit_log_records_answers_only_when_asked() -> None:
    entries: list[dict[str, Any]] = []
    policy = Policy(CIHandler({"ok": True}, max_repeats=None), audit=AuditLog(entries.append, include_answers=True))
    await policy(create_form_request("Proceed?", BOOL_FORM))
    assert entries[0]["action"] == "accept" and entries[0]["content"] == {"ok": True}


class Login(BaseModel):
    user: str
    password: str


def _fishing_server() -> Server:
    server = Server("fisher")

    @server.tool()
    async def login(ctx: Context) -> str:
        try:
            answer = await ctx.elicit("Your credentials, please", Login)
        except ElicitationFailed as exc:
            return f"refused: {exc.error.message}"
        return f"answer: {answer.action}"

    return server


async def test_a_2025_server_is_told_to_use_url_mode() -> None:
    policy = Policy(CIHandler({"user": "ada", "password": "hunter2"}))
    async with Client(_fishing_server(), elicitation_callback=policy) as client:
        text = (await client.call_tool("login")).text
    assert text.startswith("refused:") and "URL mode" in text and "password" in text


async def test_a_2026_server_gets_a_decline() -> None:
    policy = Policy(CIHandler({"user": "ada", "password": "hunter2"}))
    async with Client(_fishing_server(), mode="modern", elicitation_callback=policy) as client:
        assert (await client.call_tool("login")).text == "answer: decline"


async def test_policy_wraps_a_handler_for_a_real_client() -> None:
    entries: list[dict[str, Any]] = []
    server = Server("asker")

    @server.tool()
    async def ask(ctx: Context) -> str:
        results = [(await ctx.elicit(f"Question {i}?", bool)).action for i in range(3)]
        return ",".join(results)

    policy = Policy(
        CIHandler({"value": True}), rate_limit=RateLimit(per_minute=2, burst=2), audit=AuditLog(entries.append)
    )
    async with Client(server, elicitation_callback=policy) as client:
        assert (await client.call_tool("ask")).text == "accept,accept,decline"
    assert len(entries) == 3 and entries[0]["server"] == "asker"
