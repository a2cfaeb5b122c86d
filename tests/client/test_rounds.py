"""The multi-round-trip loop (SEP-2322) from the client's side, against a scripted 2026 server."""

from __future__ import annotations

import time
from typing import Any

import pytest

from elicitkit import Client
from elicitkit.client.rounds import (
    InputRequestViolation,
    InputRequiredResult,
    InvalidResultType,
    TooManyInputRounds,
)
from elicitkit.elicitation.requests import ElicitRequest, FormRequest
from elicitkit.elicitation.results import ElicitationResult

from ._scripted import discover_result, error, ok, scripted_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

NAME_FORM = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
}
AGE_FORM = {
    "method": "elicitation/create",
    "params": {
        "message": "Age?",
        "requestedSchema": {
            "type": "object",
            "properties": {"age": {"type": "integer"}, "newsletter": {"type": "boolean", "default": False}},
            "required": ["age"],
        },
    },
}
# Bytes a careless client would "fix": spaces, escapes, unicode, a trailing newline.
STATE_1 = '  {"step": 1, "nonce": "ä\\u00e4"}\n'
STATE_2 = "opaque/2 ==  "


def irr(body: dict[str, Any], requests: dict[str, Any] | None, state: str | None) -> tuple[int, Any]:
    result: dict[str, Any] = {"resultType": "input_required"}
    if requests is not None:
        result["inputRequests"] = requests
    if state is not None:
        result["requestState"] = state
    return ok(body, result)


def done(body: dict[str, Any], text: str) -> tuple[int, Any]:
    return ok(body, {"resultType": "complete", "content": [{"type": "text", "text": text}]})


def wizard(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    """Two rounds with changing state: name (state 1), then age plus roots (state 2), then done."""
    method, params = body["method"], body.get("params") or {}
    if method == "server/discover":
        return ok(body, discover_result())
    if method not in ("tools/call", "prompts/get", "resources/read"):
        return error(body, -32601, "nope", status=404)
    state = params.get("requestState")
    responses = params.get("inputResponses") or {}
    if state is None:
        return irr(body, {"name": NAME_FORM}, STATE_1)
    if state == STATE_1:
        return irr(body, {"age": AGE_FORM, "roots": {"method": "roots/list", "params": {}}}, STATE_2)
    if state == STATE_2:
        if method == "prompts/get":
            return ok(body, {"resultType": "complete", "messages": [], "description": str(sorted(responses))})
        if method == "resources/read":
            return ok(body, {"resultType": "complete", "contents": [{"uri": params["uri"], "text": "ok"}]})
        return done(body, f"{responses['age']['content']['age']} roots={len(responses['roots']['roots'])}")
    return error(body, -32602, f"bad state {state!r}", status=400)


class Answers:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        assert isinstance(request, FormRequest)
        self.asked.append(request.message)
        if request.message == "Name?":
            return ElicitationResult.accept({"name": "Ada"})
        return ElicitationResult.accept({"age": 36})


def client(url: str, **options: Any) -> Client:
    options.setdefault("elicitation_callback", Answers())
    options.setdefault("roots", [{"uri": "file:///work", "name": "work"}])
    return Client(url, mode="modern", **options)


async def test_multi_round_tool_call() -> None:
    answers = Answers()
    async with scripted_server(wizard) as server, client(server.url, elicitation_callback=answers) as c:
        result = await c.call_tool("signup", {"plan": "pro"})
    assert result.text == "36 roots=1"
    assert answers.asked == ["Name?", "Age?"]
    calls = server.bodies("tools/call")
    assert len(calls) == 3
    assert len({c["id"] for c in calls}) == 3  # every retry is a new request
    first, second, third = (c["params"] for c in calls)
    for params in (first, second, third):
        assert params["name"] == "signup" and params["arguments"] == {"plan": "pro"}
        assert params["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert "requestState" not in first and "inputResponses" not in first
    assert second["requestState"] == STATE_1  # byte for byte
    assert second["inputResponses"] == {"name": {"action": "accept", "content": {"name": "Ada"}}}
    assert third["requestState"] == STATE_2
    # defaults filled by the client; only this round's answers travel
    assert third["inputResponses"] == {
        "age": {"action": "accept", "content": {"age": 36, "newsletter": False}},
        "roots": {"roots": [{"uri": "file:///work", "name": "work"}]},
    }
    # retries carry their own headers too
    assert all(p.headers["mcp-name"] == "signup" for p in server.posts("tools/call"))


async def test_state_is_echoed_exactly_on_the_raw_wire() -> None:
    async with scripted_server(wizard) as server, client(server.url) as c:
        await c.call_tool("signup", {})
    raw = [s for s in server.posts("tools/call")]
    assert raw[1].body["params"]["requestState"].encode() == STATE_1.encode()


async def test_prompts_and_resources_loop_too() -> None:
    async with scripted_server(wizard) as server, client(server.url) as c:
        prompt = await c.get_prompt("p", {"x": "1"})
        resource = await c.read_resource("file:///r")
    assert prompt.description == "['age', 'roots']"
    assert resource.contents[0].uri == "file:///r"
    gets = server.bodies("prompts/get")
    assert [g["params"].get("arguments") for g in gets] == [{"x": "1"}] * 3
    assert all(r["params"]["uri"] == "file:///r" for r in server.bodies("resources/read"))


async def test_no_state_means_none_is_sent() -> None:
    def stateless(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "server/discover":
            return ok(body, discover_result())
        if "inputResponses" not in body["params"]:
            return irr(body, {"name": NAME_FORM}, None)
        return done(body, body["params"]["inputResponses"]["name"]["content"]["name"])

    async with scripted_server(stateless) as server, client(server.url) as c:
        assert (await c.call_tool("t", {})).text == "Ada"
    retry = server.bodies("tools/call")[1]["params"]
    assert "requestState" not in retry


async def test_absent_result_type_is_complete() -> None:
    def old_style(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "server/discover":
            return ok(body, discover_result())
        return ok(body, {"content": [{"type": "text", "text": "plain"}], "inputRequests": {"x": NAME_FORM}})

    async with scripted_server(old_style) as server, client(server.url) as c:
        assert (await c.call_tool("t", {})).text == "plain"
    assert len(server.bodies("tools/call")) == 1


async def test_unknown_result_type_is_an_error() -> None:
    def odd(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "server/discover":
            return ok(body, discover_result())
        return ok(body, {"resultType": "task", "content": []})

    async with scripted_server(odd) as server, client(server.url) as c:
        with pytest.raises(InvalidResultType):
            await c.call_tool("t", {})


async def test_rounds_are_bounded() -> None:
    def endless(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "server/discover":
            return ok(body, discover_result())
        return irr(body, {"name": NAME_FORM}, "again")

    async with scripted_server(endless) as server, client(server.url, max_input_rounds=3) as c:
        with pytest.raises(TooManyInputRounds, match="3 rounds"):
            await c.call_tool("t", {})
    assert len(server.bodies("tools/call")) == 4


async def test_state_only_rounds_back_off() -> None:
    def busy(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "server/discover":
            return ok(body, discover_result())
        state = body["params"].get("requestState")
        count = 0 if state is None else int(state)
        if count < 4:
            return irr(body, None, str(count + 1))
        return done(body, "ready")

    async with scripted_server(busy) as server, client(server.url, input_backoff=0.02) as c:
        started = time.monotonic()
        assert (await c.call_tool("t", {})).text == "ready"
        elapsed = time.monotonic() - started
    assert elapsed >= 0.02 + 0.04 + 0.08 + 0.16 - 0.01  # growing delays
    calls = server.bodies("tools/call")
    assert [c["params"].get("requestState") for c in calls] == [None, "1", "2", "3", "4"]
    assert all("inputResponses" not in c["params"] for c in calls)


@pytest.mark.parametrize(
    ("request_", "options"),
    [
        pytest.param({"method": "sampling/createMessage", "params": {"messages": []}}, {}, id="sampling"),
        pytest.param({"method": "roots/list", "params": {}}, {"roots": None}, id="roots"),
        pytest.param(NAME_FORM, {"elicitation_callback": None}, id="elicitation"),
        pytest.param(
            {"method": "elicitation/create", "params": {"mode": "url", "message": "go", "url": "https://x.example"}},
            {"elicitation_modes": ("form",)},
            id="url-mode",
        ),
        pytest.param({"method": "tasks/get", "params": {}}, {}, id="unknown-method"),
    ],
)
async def test_undeclared_input_request_is_a_violation(request_: dict[str, Any], options: dict[str, Any]) -> None:
    answers = Answers()

    def greedy(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "server/discover":
            return ok(body, discover_result())
        return irr(body, {"name": NAME_FORM, "bad": request_}, "s")

    options.setdefault("elicitation_callback", answers)
    async with scripted_server(greedy) as server, client(server.url, **options) as c:
        with pytest.raises(InputRequestViolation):
            await c.call_tool("t", {})
    assert len(server.bodies("tools/call")) == 1  # no retry
    assert answers.asked == []  # nobody was asked anything either


async def test_manual_mode_and_resume_from_another_client() -> None:
    async with scripted_server(wizard) as server:
        async with client(server.url) as first:
            pending = await first.call_tool("signup", {"plan": "pro"}, input_required="return")
        assert isinstance(pending, InputRequiredResult)
        assert pending.method == "tools/call"
        assert pending.name == "signup"
        assert pending.request_state == STATE_1
        assert list(pending.input_requests) == ["name"]
        assert pending.input_requests["name"].method == "elicitation/create"
        stored = pending.to_json()  # e.g. into a database, read back by another worker

        restored = InputRequiredResult.from_json(stored)
        assert restored == pending
        async with client(server.url) as second:
            responses = {"name": {"action": "accept", "content": {"name": "Grace"}}}
            step = await second.resume_tool(
                "signup", {"plan": "pro"}, responses, restored.request_state, input_required="return"
            )
            assert isinstance(step, InputRequiredResult)
            assert step.request_state == STATE_2
            final = await second.resume(step)  # answered through this client's callbacks
            assert not isinstance(final, InputRequiredResult)
            assert final["content"][0]["text"] == "36 roots=1"
    calls = server.bodies("tools/call")
    assert calls[1]["params"]["inputResponses"] == {"name": {"action": "accept", "content": {"name": "Grace"}}}
    assert calls[1]["params"]["requestState"] == STATE_1


async def test_unrelated_calls_carry_nothing_from_a_pending_round() -> None:
    async with scripted_server(wizard) as server, client(server.url) as c:
        pending = await c.call_tool("signup", {}, input_required="return")
        assert isinstance(pending, InputRequiredResult)
        other = await c.call_tool("other", {}, input_required="return")
        assert isinstance(other, InputRequiredResult)
    for body in server.bodies():
        if body["method"] == "tools/call":
            assert "requestState" not in body["params"] and "inputResponses" not in body["params"]


async def test_input_required_on_a_list_method_is_refused() -> None:
    def wrong(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "server/discover":
            return ok(body, discover_result())
        return irr(body, {"name": NAME_FORM}, "s")

    async with scripted_server(wrong) as server, client(server.url) as c:
        with pytest.raises(InvalidResultType):
            await c.list_tools()


async def test_sampling_input_request_goes_to_the_sampling_callback() -> None:
    sampled: list[dict[str, Any]] = []

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        sampled.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    def sampler(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if body["method"] == "server/discover":
            return ok(body, discover_result())
        responses = body["params"].get("inputResponses")
        if not responses:
            return irr(
                body, {"llm": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}, None
            )
        return done(body, responses["llm"]["content"]["text"])

    async with scripted_server(sampler) as server, client(server.url, sampling_callback=sample) as c:
        assert (await c.call_tool("t", {})).text == "hi"
    assert sampled == [{"messages": [], "maxTokens": 5}]
