"""Elicitation end to end: our Server asking, our Client answering (2025 eras, server requests).

Most tests run in memory (``Client(server)``); the key ones run again over stdio against
``elicit_server.py`` in a child process. Answers the real client would never send (invalid
content, late answers) come from the hand-written raw peers in :mod:`kit.raw`, or from a client
whose responder is replaced by one that returns raw wire content.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from elicitkit import Client, MCPError
from elicitkit.client.responder import UrlElicitationRequiredError
from elicitkit.client.results import CallToolResult
from elicitkit.elicitation.requests import FormRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, URL_ELICITATION_REQUIRED
from kit.raw import ELICIT_SERVER, memory_peer, stdio_peer

from .elicit_server import State, build_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]

ADA = {"name": "Ada", "age": 36}
Trace = list[tuple[str, dict[str, Any]]]


def structured(result: CallToolResult) -> Any:
    assert not result.is_error, result.text
    assert result.structured_content is not None
    return result.structured_content["result"]


def sent(trace: Trace, **match: Any) -> list[dict[str, Any]]:
    return [m for d, m in trace if d == "send" and all(m.get(k) == v for k, v in match.items())]


def received(trace: Trace, **match: Any) -> list[dict[str, Any]]:
    return [m for d, m in trace if d == "recv" and all(m.get(k) == v for k, v in match.items())]


def replies(trace: Trace, request_id: Any) -> list[dict[str, Any]]:
    """What the client answered to the server's request ``request_id`` (ids overlap across directions)."""
    return [m for d, m in trace if d == "send" and m.get("id") == request_id and "method" not in m]


def responses(trace: Trace, request_id: Any) -> list[dict[str, Any]]:
    """What the server answered to the client's request ``request_id``."""
    return [m for d, m in trace if d == "recv" and m.get("id") == request_id and "method" not in m]


def cancellations(trace: Trace) -> list[Any]:
    return [m["params"]["requestId"] for m in received(trace, method="notifications/cancelled")]


def elicitation_ids(trace: Trace) -> list[Any]:
    return [m["id"] for m in received(trace, method="elicitation/create")]


class Callback:
    """A recording elicitation callback; ``reply`` decides each answer (may block)."""

    def __init__(self, reply: Callable[[Any], Any] | None = None) -> None:
        self.requests: list[FormRequest | UrlRequest] = []
        self.cancelled = 0
        self.started = anyio.Event()
        self.reply = reply or (lambda request: ElicitationResult.accept(dict(ADA)))

    async def __call__(self, request: FormRequest | UrlRequest) -> Any:
        self.requests.append(request)
        self.started.set()
        try:
            answer = self.reply(request)
            if hasattr(answer, "__await__"):
                answer = await answer
            return answer
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise


async def never(_: Any) -> Any:
    await anyio.sleep(60)


@pytest.fixture
def built() -> tuple[Any, State]:
    return build_server()


@pytest.fixture
def server(built: tuple[Any, State]) -> Any:
    return built[0]


@pytest.fixture
def state(built: tuple[Any, State]) -> State:
    return built[1]


@asynccontextmanager
async def connect(target: Any, trace: Trace | None = None, **options: Any) -> AsyncIterator[Client]:
    tracer = None if trace is None else (lambda direction, message: trace.append((direction, message)))
    async with Client(target, trace=tracer, timeout=10, **options) as client:
        yield client


# =========================================================================== in memory: asking


async def test_model_question_accepted(server: Any, state: State) -> None:
    callback = Callback(lambda request: ElicitationResult.accept({"name": "Ada", "age": 36}))
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=callback) as client:
        assert client.capabilities()["elicitation"] == {"form": {}, "url": {}}
        answer = structured(await client.call_tool("ask_person"))
    assert answer == {
        "action": "accept",
        "type": "Person",
        "data": {"model": "Person", "name": "Ada", "age": 36, "newsletter": False},
    }
    assert state.outcomes == ["accept"]
    [request] = callback.requests
    assert isinstance(request, FormRequest)
    assert request.message == "Who are you?"
    assert request.origin is not None and request.origin.name == "elicit-test"
    assert request.origin.display_name == "Elicitation test server"
    assert request.requested_schema["required"] == ["name", "age"]
    assert request.requested_schema["properties"]["age"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 150,
        "title": "Age",
    }
    [create] = received(trace, method="elicitation/create")
    assert create["params"]["mode"] == "form"
    # the default was filled in by the client before sending
    [reply] = replies(trace, create["id"])
    assert reply["result"] == {"action": "accept", "content": {"name": "Ada", "age": 36, "newsletter": False}}


@pytest.mark.parametrize(
    ("answer", "action"),
    [
        (ElicitationResult.decline("not telling"), "decline"),
        (ElicitationResult.cancel(), "cancel"),
        ({"action": "decline"}, "decline"),
        ({"action": "cancel"}, "cancel"),
    ],
)
async def test_model_question_declined_or_cancelled(server: Any, state: State, answer: Any, action: str) -> None:
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=Callback(lambda _: answer)) as client:
        assert structured(await client.call_tool("ask_person")) == {"action": action}
    assert state.outcomes == [action]
    [create_id] = elicitation_ids(trace)
    [reply] = replies(trace, create_id)
    assert reply["result"] == {"action": action}  # the decline reason stays local


async def test_a_dict_answer_from_the_callback(server: Any) -> None:
    reply = {"action": "accept", "content": {"name": "Bo", "age": 7, "newsletter": True}}
    async with connect(server, elicitation_callback=Callback(lambda _: reply)) as client:
        answer = structured(await client.call_tool("ask_person"))
    assert answer["data"] == {"model": "Person", "name": "Bo", "age": 7, "newsletter": True}


@pytest.mark.parametrize(
    ("kind", "value", "type_name"),
    [
        ("int", 7, "int"),
        ("bool", True, "bool"),
        ("float", 2.5, "float"),
        ("str", "hello", "str"),
        ("plan", "pro", "str"),
        ("tags", ["red", "blue"], "list"),
    ],
)
async def test_scalar_shorthand_round_trip(server: Any, kind: str, value: Any, type_name: str) -> None:
    callback = Callback(lambda _: ElicitationResult.accept({"value": value}))
    async with connect(server, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("ask_scalar", {"kind": kind}))
    assert answer == {"action": "accept", "data": value, "type": type_name}
    [request] = callback.requests
    assert isinstance(request, FormRequest)
    assert list(request.requested_schema["properties"]) == ["value"]
    assert request.requested_schema["required"] == ["value"]


async def test_scalar_shorthand_rejects_a_wrong_type_on_the_client(server: Any, state: State) -> None:
    callback = Callback(lambda _: ElicitationResult.accept({"value": 7.5}))
    async with connect(server, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("ask_scalar", {"kind": "int"}))
    assert answer["error"] == "ElicitationFailed" and answer["code"] == INTERNAL_ERROR
    assert state.outcomes == [f"ElicitationFailed {INTERNAL_ERROR}"]


async def test_wizard_two_typed_questions_in_one_call(server: Any, state: State) -> None:
    def reply(request: FormRequest) -> Any:
        if request.message.startswith("Step 1"):
            return ElicitationResult.accept({"name": "Ada", "age": 36, "newsletter": True})
        return ElicitationResult.accept({"value": "pro"})

    callback = Callback(reply)
    async with connect(server, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("wizard"))
    first, second = answer["steps"]
    assert first["data"] == {"model": "Person", "name": "Ada", "age": 36, "newsletter": True}
    assert second == {"action": "accept", "data": "pro", "type": "str"}
    assert [r.message for r in callback.requests] == ["Step 1: who are you?", "Step 2: which plan, Ada?"]
    assert state.outcomes == ["accept", "accept"]


async def test_wizard_stops_after_a_decline(server: Any, state: State) -> None:
    callback = Callback(lambda _: ElicitationResult.decline())
    async with connect(server, elicitation_callback=callback) as client:
        assert structured(await client.call_tool("wizard")) == {"steps": [{"action": "decline"}]}
    assert len(callback.requests) == 1
    assert state.outcomes == ["decline"]


async def test_url_question_accepted(server: Any, state: State) -> None:
    callback = Callback(lambda _: ElicitationResult.accept())
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=callback) as client:
        answer = structured(
            await client.call_tool("ask_url", {"url": "https://example.com/x", "elicitation_id": "e-1"})
        )
    assert answer == {"action": "accept", "data": None, "type": "NoneType"}
    [request] = callback.requests
    assert isinstance(request, UrlRequest)
    assert (request.url, request.elicitation_id, request.domain) == ("https://example.com/x", "e-1", "example.com")
    [create] = received(trace, method="elicitation/create")
    assert create["params"] == {
        "mode": "url",
        "message": "Please connect your account",
        "url": "https://example.com/x",
        "elicitationId": "e-1",
    }
    assert replies(trace, create["id"])[0]["result"] == {"action": "accept"}
    assert state.outcomes == ["accept"]


# =========================================================================== re-asking invalid answers


def scripted_answers(client: Client, answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace the client's responder: send ``answers`` as-is, one per question (no client checks)."""
    seen: list[dict[str, Any]] = []

    async def answer(params: dict[str, Any], *, version: str, origin: Any) -> dict[str, Any]:
        seen.append(params)
        return answers[len(seen) - 1]

    client.elicitation.answer = answer  # type: ignore[method-assign]
    return seen


async def test_max_attempts_reasks_with_the_reason(server: Any, state: State) -> None:
    async with connect(server, elicitation_callback=Callback()) as client:
        seen = scripted_answers(
            client,
            [
                {"action": "accept", "content": {"name": "Ada", "age": "thirty-six"}},
                {"action": "accept", "content": {"name": "Ada", "age": 36}},
            ],
        )
        answer = structured(await client.call_tool("ask_twice"))
    assert answer["data"] == {"model": "Person", "name": "Ada", "age": 36, "newsletter": False}
    assert len(seen) == 2
    assert seen[0]["message"] == "Who are you?"
    assert seen[1]["message"].startswith("Who are you?")
    assert "not accepted" in seen[1]["message"] and "age" in seen[1]["message"]
    assert seen[1]["requestedSchema"] == seen[0]["requestedSchema"]
    assert state.outcomes == ["accept"]


async def test_invalid_answer_when_attempts_run_out(server: Any, state: State) -> None:
    bad = {"action": "accept", "content": {"name": "", "age": True}}
    async with connect(server, elicitation_callback=Callback()) as client:
        seen = scripted_answers(client, [bad, bad, bad])
        answer = structured(await client.call_tool("ask_twice"))
        assert len(seen) == 2
        assert answer["error"] == "InvalidAnswer"
        assert "age" in answer["reason"] and "name" in answer["reason"]
        assert state.outcomes == ["InvalidAnswer"]
        seen.clear()
        answer = structured(await client.call_tool("ask_twice", {"attempts": 1}))
        assert len(seen) == 1 and answer["error"] == "InvalidAnswer"


@pytest.mark.parametrize(
    "bad",
    [
        {"action": "decline", "content": {"name": "Ada"}},
        {"action": "maybe"},
        {"action": "accept", "content": {"name": "Ada", "age": 36, "extra": 1}},
        {"action": "accept", "content": {"name": "Ada"}},
        {"action": "accept", "content": {"name": "Ada", "age": 30.0}},
    ],
)
async def test_server_judges_raw_answers_itself(server: Any, state: State, bad: dict[str, Any]) -> None:
    async with connect(server, elicitation_callback=Callback()) as client:
        scripted_answers(client, [bad])
        answer = structured(await client.call_tool("ask_person"))
    assert answer["error"] == "InvalidAnswer"
    assert state.outcomes == ["InvalidAnswer"]


async def test_raw_peer_invalid_then_valid_answer(server: Any, state: State) -> None:
    async with memory_peer(server) as peer:
        await peer.initialize()
        call_id = await peer.call("ask_twice")
        first = await peer.next_elicitation()
        await peer.answer(first["id"], {"action": "accept", "content": {"name": "Ada", "age": "x"}})
        second = await peer.next_elicitation()
        assert second["id"] != first["id"]
        assert "not accepted" in second["params"]["message"]
        await peer.answer(second["id"], {"action": "accept", "content": {"name": "Ada", "age": 3}})
        response = await peer.response_to(call_id)
    assert response["result"]["structuredContent"]["result"]["data"]["age"] == 3
    assert state.outcomes == ["accept"]


# =========================================================================== capability and mode


async def test_no_elicitation_capability_fails_at_once(server: Any, state: State) -> None:
    trace: Trace = []
    async with connect(server, trace) as client:
        assert "elicitation" not in client.capabilities()
        started = time.monotonic()
        answer = structured(await client.call_tool("ask_person"))
        assert time.monotonic() - started < 1.0
        assert answer["error"] == "ElicitationUnsupported"
        uncaught = await client.call_tool("ask_uncaught")
        assert uncaught.is_error and "cannot be asked" in uncaught.text
        url = structured(await client.call_tool("ask_url"))
        assert url["error"] == "ElicitationUnsupported"
    assert received(trace, method="elicitation/create") == []
    assert state.outcomes == ["ElicitationUnsupported", "ElicitationUnsupported"]


async def test_url_only_client_is_not_asked_a_form(server: Any) -> None:
    callback = Callback(lambda _: ElicitationResult.accept())
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=callback, elicitation_modes=("url",)) as client:
        assert client.capabilities()["elicitation"] == {"url": {}}
        started = time.monotonic()
        answer = structured(await client.call_tool("ask_person"))
        assert time.monotonic() - started < 1.0
        assert answer["error"] == "ElicitationUnsupported"
        assert structured(await client.call_tool("ask_url"))["action"] == "accept"
    assert len(callback.requests) == 1 and isinstance(callback.requests[0], UrlRequest)
    assert [m["params"]["mode"] for m in received(trace, method="elicitation/create")] == ["url"]


async def test_form_only_client_is_not_asked_for_a_url(server: Any) -> None:
    callback = Callback()
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=callback, elicitation_modes=("form",)) as client:
        answer = structured(await client.call_tool("ask_url"))
        assert answer["error"] == "ElicitationUnsupported"
        assert structured(await client.call_tool("ask_person"))["action"] == "accept"
    assert [m["params"]["mode"] for m in received(trace, method="elicitation/create")] == ["form"]


async def test_2025_06_18_client(server: Any) -> None:
    callback = Callback(lambda _: ElicitationResult.accept({"city": "Oslo"}))
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=callback, protocol_version="2025-06-18") as client:
        assert client.protocol_version == "2025-06-18"
        assert client.capabilities()["elicitation"] == {}
        answer = structured(await client.call_tool("ask_url"))
        assert answer["error"] == "ElicitationUnsupported"
        shipping = structured(await client.call_tool("ask_shipping"))
    # the schema was down-converted: no "mode", no non-boolean default
    [create] = received(trace, method="elicitation/create")
    assert "mode" not in create["params"]
    properties = create["params"]["requestedSchema"]["properties"]
    assert "default" not in properties["plan"] and properties["express"]["default"] is False
    # so the client only fills the boolean default; the server model fills the rest
    [reply] = replies(trace, create["id"])
    assert reply["result"]["content"] == {"city": "Oslo", "express": False}
    assert shipping["data"] == {"model": "Shipping", "city": "Oslo", "express": False, "plan": "standard"}


async def test_2025_06_18_client_cannot_get_a_multi_select(server: Any) -> None:
    callback = Callback()
    async with connect(server, elicitation_callback=callback, protocol_version="2025-06-18") as client:
        answer = structured(await client.call_tool("ask_scalar", {"kind": "tags"}))
    assert answer["error"] == "SchemaError"  # refused before sending, not down-converted
    assert "multi-select" in answer["message"]
    assert callback.requests == []


# =========================================================================== timeouts and cancellation


async def test_unanswered_question_times_out_and_is_withdrawn(server: Any, state: State) -> None:
    callback = Callback(never)
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=callback) as client:
        started = time.monotonic()
        answer = structured(await client.call_tool("ask_person", {"timeout": 0.3}))
        elapsed = time.monotonic() - started
        assert answer["error"] == "ElicitationTimeout"
        assert 0.3 <= elapsed < 2.0
        [create_id] = elicitation_ids(trace)
        assert cancellations(trace) == [create_id]
        with anyio.fail_after(2):
            while not callback.cancelled:  # noqa: ASYNC110 - the callback task has no event to wait on
                await anyio.sleep(0.01)
        assert replies(trace, create_id) == []  # the client never answered it
        # the server is still usable
        await client.ping()
        callback.reply = lambda _: ElicitationResult.accept(dict(ADA))
        assert structured(await client.call_tool("ask_person"))["action"] == "accept"
    assert state.outcomes == ["ElicitationTimeout", "accept"]


async def test_client_call_timeout_is_paused_while_the_user_answers(server: Any, state: State) -> None:
    async def slow_human(request: Any) -> Any:
        await anyio.sleep(0.6)
        return ElicitationResult.accept(dict(ADA))

    async with Client(server, elicitation_callback=slow_human, timeout=0.3) as client:
        assert structured(await client.call_tool("ask_person"))["action"] == "accept"


async def test_late_answer_is_dropped_and_logged(server: Any, state: State, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with memory_peer(server) as peer:
        await peer.initialize()
        call_id = await peer.call("ask_person", timeout=0.3)
        create = await peer.next_elicitation()
        cancel = await peer.recv_until(lambda m: m.get("method") == "notifications/cancelled", timeout=3)
        assert cancel["params"]["requestId"] == create["id"]
        response = await peer.response_to(call_id)
        assert response["result"]["structuredContent"]["result"]["error"] == "ElicitationTimeout"
        await peer.answer(create["id"], {"action": "accept", "content": ADA})  # too late
        await peer.ping()
        assert state.outcomes == ["ElicitationTimeout"]  # exactly one outcome, the late answer changed nothing
        late = [r for r in caplog.records if "late response" in r.getMessage()]
        assert late and repr(create["id"]) in late[0].getMessage()
        # still usable: a fresh question is answered normally
        call_id = await peer.call("ask_person")
        create2 = await peer.next_elicitation()
        await peer.answer(create2["id"], {"action": "decline"})
        response = await peer.response_to(call_id)
        assert response["result"]["structuredContent"]["result"] == {"action": "decline"}
    assert state.outcomes == ["ElicitationTimeout", "decline"]


async def test_cancelling_the_tool_call_withdraws_the_question(server: Any, state: State) -> None:
    callback = Callback(never)
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=callback) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "ask_person")
            with anyio.fail_after(2):
                await callback.started.wait()
            tg.cancel_scope.cancel()
        [call] = sent(trace, method="tools/call")
        [create_id] = elicitation_ids(trace)
        with anyio.fail_after(2):
            while not (callback.cancelled and state.outcomes):  # noqa: ASYNC110
                await anyio.sleep(0.01)
        await client.ping()  # anything the server had sent for the call would have arrived by now
        await anyio.sleep(0.1)
        await client.ping()
        assert [m["params"]["requestId"] for m in sent(trace, method="notifications/cancelled")] == [call["id"]]
        assert cancellations(trace) == [create_id]
        assert responses(trace, call["id"]) == []
        assert replies(trace, create_id) == []
        assert callback.cancelled == 1
        assert state.outcomes == ["cancelled"]
        # still usable afterwards
        callback.reply = lambda _: ElicitationResult.cancel()
        assert structured(await client.call_tool("ask_person")) == {"action": "cancel"}
    assert state.outcomes == ["cancelled", "cancel"]


async def test_raw_peer_cancel_of_the_call_cancels_the_question(
    server: Any, state: State, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with memory_peer(server) as peer:
        await peer.initialize()
        call_id = await peer.call("ask_person")
        create = await peer.next_elicitation()
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call_id}})
        cancel = await peer.recv_until(lambda m: m.get("method") == "notifications/cancelled", timeout=3)
        assert cancel["params"]["requestId"] == create["id"]
        await peer.answer(create["id"], {"action": "accept", "content": ADA})  # too late
        await peer.ping()
        assert [m for m in peer.received if m.get("id") == call_id] == []
        assert state.outcomes == ["cancelled"]
        assert any("late response" in r.getMessage() for r in caplog.records)


async def test_tool_timeout_while_asking_withdraws_the_question() -> None:
    server, state = build_server()
    server.tools["ask_person"].timeout = 0.3
    callback = Callback(never)
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=callback) as client:
        result = await client.call_tool("ask_person")
        assert result.is_error and "timed out" in result.text
        [create_id] = elicitation_ids(trace)
        assert cancellations(trace) == [create_id]
    assert state.outcomes == ["cancelled"]


# =========================================================================== schemas


async def test_bad_dict_schema_is_invalid_params_and_nothing_is_sent(server: Any, state: State) -> None:
    callback = Callback()
    trace: Trace = []
    bad = {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}
    async with connect(server, trace, elicitation_callback=callback) as client:
        with pytest.raises(MCPError) as exc:
            await client.call_tool("ask_dict", {"requested": bad})
        await client.ping()
    assert exc.value.code == INVALID_PARAMS
    assert "address" in exc.value.message
    [problem] = exc.value.data["problems"]
    assert problem["field"] == "address" and "nested" in problem["reason"]
    assert callback.requests == []
    assert received(trace, method="elicitation/create") == []
    assert state.outcomes == []


async def test_good_dict_schema_answers_as_a_dict(server: Any, state: State) -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "count": {"type": "integer", "default": 2},
        },
        "required": ["city"],
    }
    callback = Callback(lambda _: ElicitationResult.accept({"city": "Oslo", "size": "l"}))
    async with connect(server, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("ask_dict", {"requested": schema}))
    assert answer == {"action": "accept", "data": {"city": "Oslo", "size": "l", "count": 2}, "type": "dict"}
    assert state.outcomes == ["accept"]


async def test_client_does_not_send_an_invalid_callback_answer(
    server: Any, state: State, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="elicitkit.client.elicitation")
    callback = Callback(lambda _: ElicitationResult.accept({"name": "Ada", "age": "old"}))
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("ask_person"))
    assert answer["error"] == "ElicitationFailed" and answer["code"] == INTERNAL_ERROR
    assert "age" in answer["message"]
    [create_id] = elicitation_ids(trace)
    [reply] = replies(trace, create_id)
    assert "result" not in reply and reply["error"]["code"] == INTERNAL_ERROR
    assert any(
        r.name == "elicitkit.client.elicitation" and r.levelno == logging.ERROR and "age" in r.getMessage()
        for r in caplog.records
    )
    assert state.outcomes == [f"ElicitationFailed {INTERNAL_ERROR}"]


async def test_client_refuses_content_on_a_url_accept(server: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="elicitkit.client.elicitation")
    callback = Callback(lambda _: ElicitationResult.accept({"done": True}))
    async with connect(server, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("ask_url"))
    assert answer["code"] == INTERNAL_ERROR
    assert any("carries no content" in r.getMessage() for r in caplog.records)


async def test_client_error_reply_becomes_a_tool_error_result(server: Any) -> None:
    callback = Callback(lambda _: ElicitationResult.accept({"name": "Ada", "age": "old"}))
    async with connect(server, elicitation_callback=callback) as client:
        result = await client.call_tool("ask_uncaught")
    assert result.is_error


async def test_client_fills_defaults(server: Any) -> None:
    callback = Callback(lambda _: ElicitationResult.accept({"city": "Oslo"}))
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("ask_shipping"))
    [create_id] = elicitation_ids(trace)
    [reply] = replies(trace, create_id)
    assert reply["result"]["content"] == {"city": "Oslo", "express": False, "plan": "standard"}
    assert answer["data"] == {"model": "Shipping", "city": "Oslo", "express": False, "plan": "standard"}


def form(schema: dict[str, Any]) -> dict[str, Any]:
    return {"mode": "form", "message": "raw", "requestedSchema": schema}


def one(prop: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"f": prop}}


@pytest.mark.parametrize(
    "params",
    [
        form(one({"type": "object", "properties": {"x": {"type": "string"}}})),
        form(one({"$ref": "#/$defs/x"})),
        form(one({"type": "string", "enum": [1, 2]})),
        form(one({"type": "string", "format": "ipv4"})),
        form(one({"type": "array", "items": {"type": "integer"}})),
        form({**one({"type": "string"}), "additionalProperties": True}),
        form({**one({"type": "string"}), "required": ["ghost"]}),
        form(one({"type": "integer", "minimum": 5, "default": 1})),
        {"mode": "form", "message": "no schema"},
        {"mode": "form", "requestedSchema": one({"type": "string"})},
        {"mode": "sms", "message": "?", "requestedSchema": one({"type": "string"})},
        {"mode": "url", "message": "go", "url": "not-a-url", "elicitationId": "x"},
    ],
    ids=[
        "nested",
        "ref",
        "int-enum",
        "format",
        "array",
        "additionalProperties",
        "required-ghost",
        "bad-default",
        "no-schema",
        "no-message",
        "unknown-mode",
        "bad-url",
    ],
)
async def test_client_refuses_requests_outside_the_subset(server: Any, params: dict[str, Any]) -> None:
    callback = Callback()
    async with connect(server, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("send_raw", {"params": params}))
    assert answer["code"] == INVALID_PARAMS, answer
    assert callback.requests == []


async def test_client_tolerates_harmless_annotations(server: Any) -> None:
    callback = Callback(lambda _: ElicitationResult.accept({"f": "x"}))
    params = form({**one({"type": "string", "x-foo": 1, "examples": ["y"]}), "x-bar": True})
    async with connect(server, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("send_raw", {"params": params}))
    assert answer == {"answer": {"action": "accept", "content": {"f": "x"}}}
    [request] = callback.requests
    assert isinstance(request, FormRequest)
    assert request.requested_schema["properties"]["f"]["x-foo"] == 1  # kept as received


@pytest.mark.parametrize(
    ("modes", "params"),
    [
        (("form",), {"mode": "url", "message": "go", "url": "https://example.com", "elicitationId": "u"}),
        (("url",), form(one({"type": "string"}))),
        (("url",), {"message": "implicit form", "requestedSchema": one({"type": "string"})}),
    ],
    ids=["url-to-form-client", "form-to-url-client", "implicit-form-to-url-client"],
)
async def test_client_refuses_an_undeclared_mode(server: Any, modes: tuple[str, ...], params: dict[str, Any]) -> None:
    callback = Callback()
    async with connect(server, elicitation_callback=callback, elicitation_modes=modes) as client:
        answer = structured(await client.call_tool("send_raw", {"params": params}))
    assert answer["code"] == INVALID_PARAMS
    assert "not declared" in answer["message"]
    assert callback.requests == []


async def test_client_without_callback_refuses_elicitation(server: Any) -> None:
    async with connect(server) as client:
        answer = structured(await client.call_tool("send_raw", {"params": form(one({"type": "string"}))}))
    assert answer["code"] == METHOD_NOT_FOUND  # no elicitation capability at all: the method is unknown


# =========================================================================== URL elicitation required (-32042)


async def test_url_elicitation_required_raises_typed_error(server: Any, state: State) -> None:
    async with connect(server, elicitation_callback=Callback()) as client:
        with pytest.raises(UrlElicitationRequiredError) as exc:
            await client.call_tool("needs_auth", {"key": "gh"})
    error = exc.value
    assert isinstance(error, MCPError)
    assert error.code == URL_ELICITATION_REQUIRED
    assert error.message == "Authorization required"
    [item] = error.elicitations
    assert isinstance(item, UrlRequest)
    assert item.url == "https://auth.example.com/gh?state=xyz"
    assert item.elicitation_id == "auth-gh"
    assert item.message == "Authorize gh"
    assert item.domain == "auth.example.com"
    assert item.origin is not None and item.origin.name == "elicit-test"
    assert error.data == {
        "elicitations": [
            {
                "mode": "url",
                "message": "Authorize gh",
                "url": "https://auth.example.com/gh?state=xyz",
                "elicitationId": "auth-gh",
            }
        ]
    }
    assert state.auth_attempts == 1


async def test_auto_url_elicitation_completes_and_retries(server: Any, state: State) -> None:
    async with anyio.create_task_group() as tg:
        client_box: list[Client] = []

        async def finish_later(elicitation_id: str) -> None:
            await anyio.sleep(0.05)  # the user is in the browser
            await client_box[0].call_tool("complete", {"elicitation_id": elicitation_id})

        def reply(request: Any) -> Any:
            assert isinstance(request, UrlRequest)
            tg.start_soon(finish_later, request.elicitation_id)
            return ElicitationResult.accept()

        callback = Callback(reply)
        async with connect(server, elicitation_callback=callback, auto_url_elicitation=True) as client:
            client_box.append(client)
            result = await client.call_tool("needs_auth", {"key": "gh"})
            assert result.text == "authorized gh"
            assert client.elicitation.is_complete("auth-gh")
    assert [r.url for r in callback.requests] == ["https://auth.example.com/gh?state=xyz"]  # type: ignore[union-attr]
    assert state.auth_attempts == 1


async def test_auto_url_elicitation_per_call_switch(server: Any, state: State) -> None:
    callback = Callback(lambda _: ElicitationResult.accept())
    async with connect(server, elicitation_callback=callback, auto_url_elicitation=True) as client:
        with pytest.raises(UrlElicitationRequiredError):
            await client.call_tool("needs_auth", complete_url_elicitations=False)
    assert callback.requests == []
    assert state.auth_attempts == 1


@pytest.mark.parametrize("answer", [ElicitationResult.decline(), ElicitationResult.cancel()])
async def test_auto_url_elicitation_stops_when_the_user_says_no(
    server: Any, state: State, answer: ElicitationResult[Any]
) -> None:
    async with connect(server, elicitation_callback=Callback(lambda _: answer), auto_url_elicitation=True) as client:
        with pytest.raises(UrlElicitationRequiredError):
            await client.call_tool("needs_auth")
    assert state.auth_attempts == 1


async def test_auto_url_elicitation_gives_up_without_a_completion(server: Any, state: State) -> None:
    callback = Callback(lambda _: ElicitationResult.accept())
    options: dict[str, Any] = {"auto_url_elicitation": True, "url_elicitation_timeout": 0.2}
    async with connect(server, elicitation_callback=callback, **options) as client:
        started = time.monotonic()
        with pytest.raises(UrlElicitationRequiredError):
            await client.call_tool("needs_auth")
        assert time.monotonic() - started < 2.0
    assert state.auth_attempts == 1


async def test_auto_url_elicitation_does_not_loop(server: Any, state: State) -> None:
    async with connect(server, elicitation_callback=Callback(), auto_url_elicitation=True) as client:

        async def reply(request: Any) -> Any:
            await client.call_tool("complete", {"elicitation_id": request.elicitation_id})
            return ElicitationResult.accept()

        client.elicitation.callback = Callback(reply)
        with anyio.fail_after(5), pytest.raises(UrlElicitationRequiredError) as exc:
            await client.call_tool("always_auth")
    assert exc.value.elicitations[0].elicitation_id == "auth-loop"
    assert state.auth_attempts == 2  # the first call and exactly one retry


async def test_auto_url_elicitation_with_a_sync_form_callback_still_answers_forms(server: Any) -> None:
    def sync_callback(request: Any) -> Any:
        return ElicitationResult.accept(dict(ADA))

    async with connect(server, elicitation_callback=sync_callback) as client:
        assert structured(await client.call_tool("ask_person"))["action"] == "accept"


async def test_auto_url_elicitation_with_a_sync_callback(server: Any, state: State) -> None:
    def sync_callback(request: Any) -> Any:
        return ElicitationResult.accept()

    async with connect(
        server, elicitation_callback=sync_callback, auto_url_elicitation=True, url_elicitation_timeout=0.2
    ) as client:
        with pytest.raises(UrlElicitationRequiredError):  # nobody completes it: gives up, no TypeError
            await client.call_tool("needs_auth", complete_url_elicitations=True)


@pytest.mark.parametrize(
    "options",
    [
        {"elicitation_modes": ("form",)},
        {},
        {"protocol_version": "2025-06-18"},
    ],
    ids=["form-only", "no-elicitation", "2025-06-18"],
)
async def test_client_that_cannot_open_urls_gets_an_error_result(server: Any, options: dict[str, Any]) -> None:
    if options.get("elicitation_modes") or options.get("protocol_version"):
        options = {**options, "elicitation_callback": Callback()}
    trace: Trace = []
    async with connect(server, trace, **options) as client:
        result = await client.call_tool("needs_auth")
    assert result.is_error
    assert "Authorization required" in result.text
    assert all("error" not in m for d, m in trace if d == "recv")


# =========================================================================== completion notifications


async def test_wait_for_elicitation_complete(server: Any) -> None:
    async with connect(server, elicitation_callback=Callback()) as client:
        assert await client.wait_for_elicitation_complete("e-1", timeout=0.05) is False
        results: list[bool] = []
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                results.append(await client.wait_for_elicitation_complete("e-1", timeout=5))

            tg.start_soon(wait)
            await anyio.sleep(0.05)
            assert results == []
            started = time.monotonic()
            await client.call_tool("complete", {"elicitation_id": "e-1"})
        assert results == [True]
        assert time.monotonic() - started < 1.0
        # once completed, later waits return at once
        assert await client.wait_for_elicitation_complete("e-1", timeout=0) is True


async def test_wait_for_elicitation_complete_times_out(server: Any) -> None:
    async with connect(server, elicitation_callback=Callback()) as client:
        started = time.monotonic()
        assert await client.wait_for_elicitation_complete("never", timeout=0.15) is False
        assert 0.15 <= time.monotonic() - started < 1.0


async def test_unknown_and_duplicate_completions_are_ignored(server: Any) -> None:
    notes: list[tuple[str, Any]] = []
    options: dict[str, Any] = {
        "elicitation_callback": Callback(),
        "notification_callback": lambda m, p: notes.append((m, p)),
    }
    async with connect(server, **options) as client:
        results: list[bool] = []
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                results.append(await client.wait_for_elicitation_complete("mine", timeout=0.3))

            tg.start_soon(wait)
            await client.call_tool("complete", {"elicitation_id": "somebody-else"})
            await client.call_tool("complete", {"elicitation_id": "somebody-else"})
        assert results == [False]  # an unrelated id did not wake the waiter
        await client.call_tool("complete", {"elicitation_id": "mine"})
        await client.call_tool("complete", {"elicitation_id": "mine"})  # duplicate: harmless
        assert await client.wait_for_elicitation_complete("mine", timeout=1) is True
        await client.ping()
    completions = [p for m, p in notes if m == "notifications/elicitation/complete"]
    assert len(completions) == 4


async def test_malformed_completion_is_ignored(server: Any) -> None:
    async with connect(server, elicitation_callback=Callback()) as client:
        await client.peer.feed(b'{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{}}')
        await client.peer.feed(
            b'{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":7}}'
        )
        await client.ping()
        assert await client.wait_for_elicitation_complete("7", timeout=0.05) is False


# =========================================================================== stdio


def stdio_target(tmp_path: Path) -> tuple[list[str], dict[str, Any]]:
    stderr = (tmp_path / "client-server-stderr.txt").open("wb")
    return [sys.executable, str(ELICIT_SERVER)], {"transport_options": {"stderr": stderr}}


async def outcomes_of(client: Client) -> dict[str, Any]:
    return structured(await client.call_tool("outcomes"))  # type: ignore[no-any-return]


async def test_stdio_accept_decline_and_wizard(tmp_path: Path) -> None:
    def reply(request: FormRequest) -> Any:
        if request.message == "Who are you?":
            return ElicitationResult.decline()
        if request.message.startswith("Step 1"):
            return ElicitationResult.accept({"name": "Ada", "age": 36})
        if request.message == "Give me a bool":
            return ElicitationResult.accept({"value": True})
        return ElicitationResult.accept({"value": "free"})

    command, options = stdio_target(tmp_path)
    callback = Callback(reply)
    async with connect(command, elicitation_callback=callback, **options) as client:
        assert structured(await client.call_tool("ask_person")) == {"action": "decline"}
        steps = structured(await client.call_tool("wizard"))["steps"]
        assert steps[0]["data"] == {"model": "Person", "name": "Ada", "age": 36, "newsletter": False}
        assert steps[1]["data"] == "free"
        scalar = structured(await client.call_tool("ask_scalar", {"kind": "bool"}))
        assert scalar["action"] == "accept"
        assert (await outcomes_of(client))["outcomes"] == ["decline", "accept", "accept", "accept"]
    assert callback.requests[0].origin is not None
    assert (
        callback.requests[0].origin.location is not None and "elicit_server.py" in callback.requests[0].origin.location
    )


async def test_stdio_unsupported_and_timeout(tmp_path: Path) -> None:
    command, options = stdio_target(tmp_path)
    async with connect(command, **options) as client:
        started = time.monotonic()
        assert structured(await client.call_tool("ask_person"))["error"] == "ElicitationUnsupported"
        assert time.monotonic() - started < 1.0
        assert (await client.call_tool("needs_auth")).is_error

    callback = Callback(never)
    trace: Trace = []
    command, options = stdio_target(tmp_path)
    async with connect(command, trace, elicitation_callback=callback, **options) as client:
        answer = structured(await client.call_tool("ask_person", {"timeout": 0.3}))
        assert answer["error"] == "ElicitationTimeout"
        [create_id] = elicitation_ids(trace)
        assert cancellations(trace) == [create_id]
        callback.reply = lambda _: ElicitationResult.accept(dict(ADA))
        assert structured(await client.call_tool("ask_person"))["action"] == "accept"
        assert (await outcomes_of(client))["outcomes"] == ["ElicitationTimeout", "accept"]


async def test_stdio_cancel_the_call(tmp_path: Path) -> None:
    callback = Callback(never)
    trace: Trace = []
    command, options = stdio_target(tmp_path)
    async with connect(command, trace, elicitation_callback=callback, **options) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "ask_person")
            with anyio.fail_after(5):
                await callback.started.wait()
            tg.cancel_scope.cancel()
        [call] = sent(trace, method="tools/call")
        [create_id] = elicitation_ids(trace)
        with anyio.fail_after(5):
            while not callback.cancelled:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        assert cancellations(trace) == [create_id]
        assert (await outcomes_of(client))["outcomes"] == ["cancelled"]
        assert responses(trace, call["id"]) == []


async def test_stdio_url_elicitation_required(tmp_path: Path) -> None:
    command, options = stdio_target(tmp_path)
    async with connect(command, elicitation_callback=Callback(), **options) as client:
        with pytest.raises(UrlElicitationRequiredError) as exc:
            await client.call_tool("needs_auth", {"key": "gl"})
        assert [e.elicitation_id for e in exc.value.elicitations] == ["auth-gl"]

        async def reply(request: Any) -> Any:
            await client.call_tool("complete", {"elicitation_id": request.elicitation_id})
            return ElicitationResult.accept()

        client.elicitation.callback = Callback(reply)
        result = await client.call_tool("needs_auth", {"key": "gl"}, complete_url_elicitations=True)
        assert result.text == "authorized gl"
        assert (await outcomes_of(client))["auth_attempts"] == 2


async def test_stdio_raw_reask_and_late_answer(tmp_path: Path) -> None:
    async with stdio_peer(tmp_path) as peer:
        await peer.initialize()
        call_id = await peer.call("ask_twice")
        first = await peer.next_elicitation()
        await peer.answer(first["id"], {"action": "accept", "content": {"name": "Ada", "age": 30.0}})
        second = await peer.next_elicitation()
        assert "not accepted" in second["params"]["message"]
        await peer.answer(second["id"], {"action": "accept", "content": {"name": "Ada", "age": 30}})
        response = await peer.response_to(call_id)
        assert response["result"]["structuredContent"]["result"]["data"]["age"] == 30

        call_id = await peer.call("ask_person", timeout=0.3)
        create = await peer.next_elicitation()
        cancel = await peer.recv_until(lambda m: m.get("method") == "notifications/cancelled")
        assert cancel["params"]["requestId"] == create["id"]
        response = await peer.response_to(call_id)
        assert response["result"]["structuredContent"]["result"]["error"] == "ElicitationTimeout"
        await peer.answer(create["id"], {"action": "accept", "content": ADA})
        await peer.ping()
        await peer.wait_for_stderr(f"late response to request {create['id']!r}")
        call_id = await peer.call("outcomes")
        response = await peer.response_to(call_id)
        assert response["result"]["structuredContent"]["result"]["outcomes"] == ["accept", "ElicitationTimeout"]


# =========================================================================== issue 12


async def test_defect_04_ctx_elicit_with_a_dict_schema(server: Any, state: State) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    callback = Callback(lambda _: ElicitationResult.accept({"city": "Oslo"}))
    async with connect(server, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("ask_elicit_dict", {"requested": schema}))
        again = structured(await client.call_tool("ask_elicit_dict", {"requested": schema}))
    assert answer == again == {"action": "accept", "data": {"city": "Oslo"}, "type": "dict"}
    assert state.outcomes == ["accept", "accept"]


async def test_defect_04_ctx_elicit_with_a_bad_dict_schema_is_a_schema_error(server: Any, state: State) -> None:
    callback = Callback()
    bad = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^a"}}}
    async with connect(server, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("ask_elicit_dict", {"requested": bad}))
    assert answer["error"] == "SchemaError" and "pattern" in answer["message"]
    assert callback.requests == []


REF_IN_ITEMS = {
    "type": "object",
    "properties": {"v": {"type": "array", "items": {"type": "string", "enum": ["a"], "$ref": "#/x"}, "default": ["a"]}},
}


@pytest.mark.parametrize(
    "items_extra",
    [{"$ref": "#/x"}, {"$dynamicRef": "#x"}, {"not": {"enum": ["b"]}}, {"allOf": [{}]}, {"minLength": 1}],
    ids=["ref", "dynamicRef", "not", "allOf", "minLength"],
)
async def test_defect_01_client_refuses_keywords_inside_items_with_invalid_params(
    server: Any, items_extra: dict[str, Any]
) -> None:
    callback = Callback(lambda _: ElicitationResult.accept({"v": ["a"]}))
    schema = one({"type": "array", "items": {"type": "string", "enum": ["a"], **items_extra}})
    async with connect(server, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("send_raw", {"params": form(schema)}))
    assert answer["code"] == INVALID_PARAMS, answer
    [keyword] = items_extra
    assert keyword in answer["message"]
    assert callback.requests == []


async def test_defect_02_client_answers_a_ref_in_items_with_invalid_params(server: Any) -> None:
    """A hostile server got -32603 with jsonschema's internals; now -32602 saying what is wrong."""
    callback = Callback()
    async with connect(server, elicitation_callback=callback) as client:
        answer = structured(await client.call_tool("send_raw", {"params": form(REF_IN_ITEMS)}))
        await client.ping()
    assert answer["code"] == INVALID_PARAMS, answer
    assert "$ref" in answer["message"] and "Pointer" not in answer["message"]
    assert callback.requests == []


async def test_defect_02_server_refuses_a_ref_in_items_before_sending(server: Any, state: State) -> None:
    callback = Callback()
    trace: Trace = []
    async with connect(server, trace, elicitation_callback=callback) as client:
        with pytest.raises(MCPError) as exc:
            await client.call_tool("ask_dict", {"requested": REF_IN_ITEMS})
    assert exc.value.code == INVALID_PARAMS and "$ref" in exc.value.message
    assert received(trace, method="elicitation/create") == []


@pytest.mark.timeout(10)
async def test_defect_03_client_validates_a_redos_pattern_at_once(server: Any) -> None:
    """A server-chosen ``^(a+)+$`` froze the client for 1.6 s per 24 characters of answer."""
    answers = iter([{"v": "a" * 40 + "!"}, {"v": "aaaa"}])
    callback = Callback(lambda _: ElicitationResult.accept(next(answers)))
    schema = one({"type": "string", "pattern": "^(a+)+$"})
    schema["properties"] = {"v": schema["properties"]["f"]}
    async with connect(server, elicitation_callback=callback) as client:
        refused = structured(await client.call_tool("send_raw", {"params": form(schema)}))
        fine = structured(await client.call_tool("send_raw", {"params": form(schema)}))
    assert refused["code"] == INTERNAL_ERROR and "does not match" in refused["message"], refused
    assert fine == {"answer": {"action": "accept", "content": {"v": "aaaa"}}}
