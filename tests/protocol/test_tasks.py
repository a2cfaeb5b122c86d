"""The Tasks extension's pure wire layer: params, shapes and the status machine, as the suite checks them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from elicitkit.protocol import tasks as t
from elicitkit.protocol.errors import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY, MCPError
from elicitkit.protocol.subscriptions import parse_listen

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")  # the suite's own test for timestamps
CREATED = 1_795_000_000.25
UPDATED = 1_795_000_060.5


def view(status: str = "working", **kw: Any) -> t.TaskView:
    return t.TaskView(task_id="abc", status=status, created_at=CREATED, updated_at=UPDATED, ttl_ms=60_000, **kw)


# ----------------------------------------------------------------------------- capabilities


def test_server_advertises_under_extensions_only() -> None:
    assert t.server_extensions() == {"io.modelcontextprotocol/tasks": {}}


@pytest.mark.parametrize(
    ("caps", "expected"),
    [
        ({"extensions": {"io.modelcontextprotocol/tasks": {}}}, True),
        ({"extensions": {"io.modelcontextprotocol/tasks": {"future": 1}}}, True),
        ({"extensions": {"io.modelcontextprotocol/tasks": True}}, False),
        ({"extensions": {"other": {}}}, False),
        ({"extensions": []}, False),
        ({"tasks": {"requests": {"tools": {"call": {}}}}}, False),  # the 2025 slot is not the extension
        ({}, False),
        (None, False),
        ("x", False),
    ],
)
def test_declares_tasks(caps: Any, expected: bool) -> None:
    assert t.declares_tasks(caps) is expected


def test_client_extensions_are_what_declares_tasks_accepts() -> None:
    assert t.declares_tasks({"extensions": t.client_extensions()})


def test_missing_extension_error_has_the_required_capabilities_shape() -> None:
    err = t.missing_extension()
    assert err.code == MISSING_REQUIRED_CLIENT_CAPABILITY == -32021
    wire = err.to_error()
    assert wire["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"] == {}


# ----------------------------------------------------------------------------- state machine


@pytest.mark.parametrize("terminal", ["completed", "failed", "cancelled"])
def test_terminal_statuses_never_change(terminal: str) -> None:
    assert t.is_terminal(terminal)
    for other in t.STATUSES:
        assert not t.can_transition(terminal, other)
        with pytest.raises(t.InvalidTransition):
            t.check_transition(terminal, other)


@pytest.mark.parametrize(
    ("current", "new"),
    [
        ("working", "input_required"),
        ("working", "completed"),
        ("working", "failed"),
        ("working", "cancelled"),
        ("working", "working"),
        ("input_required", "working"),
        ("input_required", "input_required"),
        ("input_required", "cancelled"),
        ("input_required", "failed"),
        ("input_required", "completed"),
    ],
)
def test_live_moves_are_allowed(current: str, new: str) -> None:
    assert t.can_transition(current, new)
    t.check_transition(current, new)


def test_unknown_status_is_a_caller_bug() -> None:
    with pytest.raises(t.InvalidTransition):
        t.check_transition("working", "paused")
    assert not t.can_transition("paused", "working")


def test_removed_and_live_methods_do_not_overlap() -> None:
    assert {"tasks/result", "tasks/list"} == t.REMOVED_METHODS
    assert not t.REMOVED_METHODS & t.METHODS
    assert t.NAME_PARAM == {"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


# ----------------------------------------------------------------------------- params


def test_parse_get_and_cancel() -> None:
    assert t.parse_get({"taskId": "abc", "_meta": {}}) == t.TaskRef("abc")
    assert t.parse_cancel({"taskId": "abc"}) == t.TaskRef("abc")


@pytest.mark.parametrize("params", [None, [], "abc", {}, {"taskId": ""}, {"taskId": 7}, {"taskId": None}])
@pytest.mark.parametrize("parse", [t.parse_get, t.parse_cancel])
def test_bad_task_refs_are_invalid_params(parse: Any, params: Any) -> None:
    with pytest.raises(MCPError) as info:
        parse(params)
    assert info.value.code == INVALID_PARAMS
    assert "taskId" in info.value.message or "params" in info.value.message


def test_overlong_task_id_is_invalid_params() -> None:
    with pytest.raises(MCPError) as info:
        t.parse_get({"taskId": "x" * (t.MAX_TASK_ID_LENGTH + 1)})
    assert info.value.code == INVALID_PARAMS


def test_parse_update_keeps_unknown_keys_for_the_server_to_ignore() -> None:
    # the suite's dispatch check answers an unknown key and wants an ack, so parsing must not reject it
    update = t.parse_update({"taskId": "abc", "inputResponses": {"unknown-key": {"ignored": True}}})
    assert update.task_id == "abc"
    assert dict(update.input_responses) == {"unknown-key": {"ignored": True}}
    assert t.parse_update({"taskId": "abc", "inputResponses": {}}).input_responses == {}


@pytest.mark.parametrize(
    "params",
    [
        {"taskId": "abc"},
        {"taskId": "abc", "inputResponses": None},
        {"taskId": "abc", "inputResponses": []},
        {"taskId": "abc", "inputResponses": {"q1": 12345}},
        {"taskId": "abc", "inputResponses": {"q1": None}},
        {"inputResponses": {}},
    ],
)
def test_bad_updates_are_invalid_params(params: Any) -> None:
    with pytest.raises(MCPError) as info:
        t.parse_update(params)
    assert info.value.code == INVALID_PARAMS


def test_listening_for_tasks_needs_the_extension() -> None:
    wanted = parse_listen({"notifications": {"taskIds": ["a"]}})
    t.check_listen(wanted, {"extensions": {"io.modelcontextprotocol/tasks": {}}})
    t.check_listen(parse_listen({"notifications": {"toolsListChanged": True}}), {})  # no task ids: no need
    with pytest.raises(MCPError) as info:
        t.check_listen(wanted, {})
    assert info.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert info.value.data == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


# ----------------------------------------------------------------------------- shapes


def test_create_task_result_is_flat_and_payload_free() -> None:
    out = t.create_task_result(
        view("input_required", poll_interval_ms=500, input_requests={"q1": {"method": "elicitation/create"}})
    )
    assert out["resultType"] == "task"
    assert out["taskId"] == "abc" and out["status"] == "input_required"
    assert ISO.match(out["createdAt"]) and ISO.match(out["lastUpdatedAt"])
    assert out["ttlMs"] == 60_000 and out["pollIntervalMs"] == 500
    for forbidden in ("task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"):
        assert forbidden not in out


def test_ttl_key_is_always_present_even_when_unlimited() -> None:
    out = t.create_task_result(t.TaskView("abc", "working", CREATED, UPDATED, ttl_ms=None))
    assert "ttlMs" in out and out["ttlMs"] is None
    assert "pollIntervalMs" not in out and "statusMessage" not in out


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "100"])
def test_durations_must_be_positive_integers(bad: Any) -> None:
    with pytest.raises(ValueError):
        t.TaskView("abc", "working", CREATED, UPDATED, ttl_ms=bad)
    with pytest.raises(ValueError):
        t.TaskView("abc", "working", CREATED, UPDATED, ttl_ms=None, poll_interval_ms=bad)


def test_unknown_status_cannot_be_shown() -> None:
    with pytest.raises(ValueError):
        view("paused")


def test_get_result_per_status() -> None:
    working = t.get_task_result(view("working", status_message="busy"))
    assert working["resultType"] == "complete" and working["statusMessage"] == "busy"
    assert not {"result", "error", "inputRequests"} & set(working)

    requests = {"q1": {"method": "elicitation/create", "params": {"message": "ok?"}}}
    waiting = t.get_task_result(view("input_required", input_requests=requests))
    assert waiting["inputRequests"] == requests
    assert not {"result", "error"} & set(waiting)

    tool_error = {"content": [{"type": "text", "text": "nope"}], "isError": True}
    done = t.get_task_result(view("completed", result=tool_error, input_requests=requests))
    assert done["result"] == tool_error and "inputRequests" not in done and "error" not in done

    failed = t.get_task_result(view("failed", error={"code": -32603, "message": "boom"}, result=tool_error))
    assert failed["error"] == {"code": -32603, "message": "boom"} and "result" not in failed

    cancelled = t.get_task_result(view("cancelled", input_requests=requests))
    assert not {"result", "error", "inputRequests"} & set(cancelled)
    assert "requestState" not in cancelled


def test_failed_without_a_recorded_error_still_has_an_error_object() -> None:
    err = t.detailed_task(view("failed"))["error"]
    assert isinstance(err["code"], int) and isinstance(err["message"], str)


def test_inlined_result_drops_the_related_task_meta() -> None:
    result = {"content": [], "_meta": {t.RELATED_TASK_META: {"taskId": "abc"}, "keep": 1}}
    shown = t.detailed_task(view("completed", result=result))["result"]
    assert shown["_meta"] == {"keep": 1}
    assert result["_meta"][t.RELATED_TASK_META] == {"taskId": "abc"}  # the record is not mutated
    bare = t.inline_result({"content": [], "_meta": {t.RELATED_TASK_META: {}}})
    assert "_meta" not in bare
    plain = {"content": []}
    assert t.inline_result(plain) is plain


def test_ack_has_nothing_but_the_discriminator() -> None:
    assert t.ack() == {"resultType": "complete"}


def test_notification_is_the_detailed_task_tagged_with_its_subscription() -> None:
    msg = t.task_notification(view("completed", result={"content": []}), subscription_id=7)
    assert msg["method"] == "notifications/tasks"
    assert msg["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 7}
    assert msg["params"]["result"] == {"content": []}
    assert "resultType" not in msg["params"]


def test_iso8601_round_trip_and_shape() -> None:
    text = t.iso8601(CREATED)
    assert text.endswith("Z") and ISO.match(text)
    assert abs(t.parse_iso8601(text) - CREATED) < 0.001
    assert t.parse_iso8601("2025-11-25T10:30:00+00:00") == t.parse_iso8601("2025-11-25T10:30:00Z")


def test_duration_ms() -> None:
    assert t.duration_ms(None) is None
    assert t.duration_ms(1.5) == 1500
    assert t.duration_ms(0.0001) == 1
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            t.duration_ms(bad)


def test_error_object_and_create_result_detection() -> None:
    assert t.error_object(MCPError(-32603, "boom", {"x": 1})) == {"code": -32603, "message": "boom", "data": {"x": 1}}
    handle = t.create_task_result(view())
    assert t.is_create_task_result(handle)
    assert not t.is_create_task_result({"resultType": "complete", "content": []})
    assert not t.is_create_task_result({"resultType": "task"})
    assert not t.is_create_task_result(None)


def test_client_poll_delay() -> None:
    assert t.poll_delay({"pollIntervalMs": 250}) == 0.25
    for odd in ({}, {"pollIntervalMs": 0}, {"pollIntervalMs": "5"}, {"pollIntervalMs": True}):
        assert t.poll_delay(odd, default=2.0) == 2.0


def test_client_asks_each_input_request_once() -> None:
    requests = {"q1": {"method": "elicitation/create"}, "q2": {"method": "roots/list"}}
    task = t.get_task_result(view("input_required", input_requests=requests))
    assert t.unseen_requests(task, set()) == requests
    assert t.unseen_requests(task, {"q1"}) == {"q2": requests["q2"]}
    assert t.unseen_requests(t.get_task_result(view("working")), set()) == {}
    assert t.unseen_requests({"status": "input_required", "inputRequests": ["q1"]}, set()) == {}
