"""The sans-I/O Connection: correlation both ways, cancellation, progress, invalid input."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit.protocol.connection import (
    CANCELLED,
    PROGRESS,
    CancelReceived,
    Connection,
    Dropped,
    ErrorReceived,
    NotificationReceived,
    ProgressReceived,
    RequestReceived,
    ResponseReceived,
    Role,
    SendReply,
)
from elicitkit.protocol.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    LocalProtocolError,
    MCPError,
)
from elicitkit.protocol.jsonrpc import Notification, Request, Response, encode


def request(request_id: Any, method: str = "tools/call", params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def result(request_id: Any, value: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value if value is not None else {}}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def cancel(request_id: Any, reason: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"requestId": request_id}
    if reason is not None:
        params["reason"] = reason
    return notification(CANCELLED, params)


def only(events: list[Any]) -> Any:
    assert len(events) == 1, events
    return events[0]


@pytest.fixture
def conn() -> Connection:
    return Connection(Role.SERVER)


# ----------------------------------------------------------------------------- outgoing requests


def test_request_ids_are_sequential_from_first_id() -> None:
    c = Connection(Role.CLIENT, first_id=10)
    ids = [c.start_request("ping").id for _ in range(3)]
    assert ids == [10, 11, 12]
    assert c.pending_outgoing == 3
    assert Connection(Role.CLIENT).start_request("ping").id == 0


def test_start_request_wire_shape() -> None:
    c = Connection(Role.CLIENT)
    req = c.start_request("tools/list", {"cursor": "x"})
    assert req == Request(0, "tools/list", {"cursor": "x"})
    assert req.to_wire() == {"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"cursor": "x"}}


def test_start_request_with_progress_attaches_a_token_without_mutating_params() -> None:
    c = Connection(Role.CLIENT)
    params = {"name": "t", "_meta": {"other": 1}}
    req = c.start_request("tools/call", params, progress=True)
    assert req.params == {"name": "t", "_meta": {"other": 1, "progressToken": req.id}}
    assert params == {"name": "t", "_meta": {"other": 1}}
    req2 = c.start_request("tools/call", None, progress=True)
    assert req2.params == {"_meta": {"progressToken": req2.id}}


def test_response_is_correlated_with_its_request() -> None:
    c = Connection(Role.CLIENT)
    a = c.start_request("tools/list")
    b = c.start_request("tools/call")
    event = only(c.receive(result(b.id, {"b": 1})))
    assert event == ResponseReceived(b.id, "tools/call", {"b": 1})
    event = only(c.receive_data(encode(result(a.id, {"a": 1}))))
    assert event == ResponseReceived(a.id, "tools/list", {"a": 1})
    assert c.pending_outgoing == 0


def test_error_response_is_correlated() -> None:
    c = Connection(Role.CLIENT)
    req = c.start_request("x/y")
    event = only(c.receive({"jsonrpc": "2.0", "id": req.id, "error": {"code": -32601, "message": "nope"}}))
    assert type(event) is ErrorReceived
    assert (event.request_id, event.method, event.error.code, event.error.message) == (
        req.id,
        "x/y",
        METHOD_NOT_FOUND,
        "nope",
    )


def test_second_response_to_the_same_id_is_dropped() -> None:
    c = Connection(Role.CLIENT)
    req = c.start_request("ping")
    assert type(only(c.receive(result(req.id)))) is ResponseReceived
    event = only(c.receive(result(req.id)))
    assert type(event) is Dropped
    assert "unknown request id" in event.reason


@pytest.mark.parametrize("bogus_id", [999, "0", "nope"])
def test_response_to_unknown_id_is_dropped_not_answered(bogus_id: Any) -> None:
    c = Connection(Role.CLIENT)
    c.start_request("ping")  # id 0 (an int: "0" must not match it)
    event = only(c.receive(result(bogus_id)))
    assert type(event) is Dropped
    assert repr(bogus_id) in event.reason
    assert event.message == Response(bogus_id, {})
    assert c.pending_outgoing == 1


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "1.0", "id": 0, "result": {}},  # wrong version: answered -32600, not settled
        {"id": 0, "result": {}},  # no version at all
        {"jsonrpc": "2.0", "id": 0, "result": []},  # a result that is not an object
        {"jsonrpc": "2.0", "id": False, "result": {}},  # False is not the id 0
        {"jsonrpc": "2.0", "id": 0.0, "result": {}},  # nor is 0.0
        {"jsonrpc": "2.0", "id": 0, "result": {}, "error": {"code": 1, "message": "x"}},  # both members
    ],
)
def test_malformed_answer_to_a_pending_request_settles_nothing(message: dict[str, Any]) -> None:
    """The quick path for answers takes only well-formed ones: the rest go through the full
    parse (and its errors), and the request keeps waiting for a real answer."""
    c = Connection(Role.CLIENT)
    req = c.start_request("tools/call")
    assert req.id == 0
    event = only(c.receive(message))
    assert type(event) in (SendReply, Dropped)
    assert c.pending_outgoing == 1
    assert type(only(c.receive(result(0, {"ok": True})))) is ResponseReceived


def test_error_with_null_id_is_dropped() -> None:
    c = Connection(Role.CLIENT)
    event = only(c.receive({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}))
    assert type(event) is Dropped
    assert "Parse error" in event.reason


def test_abandon_returns_a_cancellation_and_late_answers_are_dropped() -> None:
    c = Connection(Role.CLIENT)
    req = c.start_request("tools/call")
    note = c.abandon_request(req.id, "timeout")
    assert note == Notification(CANCELLED, {"requestId": req.id, "reason": "timeout"})
    assert c.pending_outgoing == 0
    event = only(c.receive(result(req.id)))
    assert type(event) is Dropped
    assert "late response" in event.reason and "timeout" in event.reason
    # only once: after that it is an unknown id
    assert "unknown" in only(c.receive(result(req.id))).reason


def test_abandon_initialize_sends_no_cancellation() -> None:
    c = Connection(Role.CLIENT)
    req = c.start_request("initialize", {})
    assert c.abandon_request(req.id, "timeout") is None
    assert "late response" in only(c.receive(result(req.id))).reason


def test_abandon_unknown_or_settled_request_is_a_no_op() -> None:
    c = Connection(Role.CLIENT)
    assert c.abandon_request(42, "cancelled") is None
    req = c.start_request("ping")
    c.receive(result(req.id))
    assert c.abandon_request(req.id, "cancelled") is None


def test_abandoned_ids_are_remembered_only_for_a_bounded_while() -> None:
    c = Connection(Role.CLIENT)
    ids = [c.start_request("ping").id for _ in range(1100)]
    for request_id in ids:
        c.abandon_request(request_id, "timeout")
    assert len(c._abandoned) <= 1024
    assert "unknown" in only(c.receive(result(ids[0]))).reason
    assert "late" in only(c.receive(result(ids[-1]))).reason


def test_abandoning_forgets_the_progress_token() -> None:
    c = Connection(Role.CLIENT)
    req = c.start_request("tools/call", {}, progress=True)
    c.abandon_request(req.id, "cancelled")
    event = only(c.receive(notification(PROGRESS, {"progressToken": req.id, "progress": 1})))
    assert type(event) is Dropped


# ----------------------------------------------------------------------------- incoming requests


def test_incoming_request_is_tracked_until_answered(conn: Connection) -> None:
    event = only(conn.receive(request(1, "tools/list")))
    assert event == RequestReceived(Request(1, "tools/list", None))
    assert conn.running_incoming == 1
    assert conn.is_running(1)
    response = conn.respond(1, {"tools": []})
    assert response == Response(1, {"tools": []})
    assert conn.running_incoming == 0
    assert not conn.is_running(1)


def test_respond_error(conn: Connection) -> None:
    conn.receive(request("a"))
    answered = conn.respond_error("a", MCPError(INVALID_PARAMS, "bad"))
    assert answered is not None
    assert answered.to_wire() == {"jsonrpc": "2.0", "id": "a", "error": {"code": -32602, "message": "bad"}}
    assert conn.running_incoming == 0


def test_answering_twice_or_unknown_is_a_local_protocol_error(conn: Connection) -> None:
    conn.receive(request(1))
    conn.respond(1, {})
    with pytest.raises(LocalProtocolError):
        conn.respond(1, {})
    with pytest.raises(LocalProtocolError):
        conn.respond_error(2, MCPError(INVALID_REQUEST))


def test_duplicate_request_id_while_running_is_rejected(conn: Connection) -> None:
    assert type(only(conn.receive(request(7, "tools/call")))) is RequestReceived
    event = only(conn.receive(request(7, "ping")))
    assert type(event) is SendReply
    assert event.message["id"] == 7
    assert event.message["error"]["code"] == INVALID_REQUEST
    # the first request is untouched and can still be answered
    assert conn.running_incoming == 1
    assert conn.respond(7, {"ok": True}) == Response(7, {"ok": True})
    # once answered, the id may be reused
    assert type(only(conn.receive(request(7, "ping")))) is RequestReceived


def test_same_value_different_type_ids_are_distinct(conn: Connection) -> None:
    assert type(only(conn.receive(request(1)))) is RequestReceived
    assert type(only(conn.receive(request("1")))) is RequestReceived
    assert conn.running_incoming == 2


def test_ids_are_per_direction() -> None:
    c = Connection(Role.CLIENT)
    ours = c.start_request("ping")
    # the peer may use the same id for its own request: that is a request, not our answer
    event = only(c.receive(request(ours.id, "roots/list")))
    assert type(event) is RequestReceived
    assert c.pending_outgoing == 1
    assert type(only(c.receive(result(ours.id)))) is ResponseReceived


# ----------------------------------------------------------------------------- cancellation


def test_cancel_of_running_request(conn: Connection) -> None:
    conn.receive(request(3))
    event = only(conn.receive(cancel(3, "user hit stop")))
    assert event == CancelReceived(3, "user hit stop")
    assert not conn.is_running(3)
    assert conn.running_incoming == 1  # still there until the runtime settles it
    assert conn.respond(3, {}) is None  # the peer expects nothing
    assert conn.running_incoming == 0


def test_cancel_then_error_answer_is_suppressed(conn: Connection) -> None:
    conn.receive(request(3))
    conn.receive(cancel(3))
    assert conn.respond_error(3, MCPError(INVALID_PARAMS)) is None


def test_cancel_then_discard(conn: Connection) -> None:
    conn.receive(request("x"))
    conn.receive(cancel("x"))
    conn.discard("x")
    assert conn.running_incoming == 0
    conn.discard("x")  # idempotent


def test_cancel_reason_is_optional_and_must_be_a_string(conn: Connection) -> None:
    conn.receive(request(1))
    conn.receive(request(2))
    assert only(conn.receive(cancel(1))) == CancelReceived(1, None)
    event = only(conn.receive(notification(CANCELLED, {"requestId": 2, "reason": 5})))
    assert event == CancelReceived(2, None)


def test_second_cancel_is_dropped(conn: Connection) -> None:
    conn.receive(request(1))
    conn.receive(cancel(1))
    event = only(conn.receive(cancel(1)))
    assert type(event) is Dropped
    assert "already cancelled" in event.reason


@pytest.mark.parametrize(
    "params",
    [{"requestId": 99}, {"requestId": "1"}, {"requestId": 1.0}, {"requestId": None}, {}, {"requestId": [1]}],
)
def test_cancel_for_a_request_that_is_not_running_is_dropped(conn: Connection, params: dict[str, Any]) -> None:
    conn.receive(request(1))
    event = only(conn.receive(notification(CANCELLED, params)))
    assert type(event) is Dropped
    assert conn.is_running(1)


def test_cancel_without_params_is_dropped(conn: Connection) -> None:
    assert type(only(conn.receive(notification(CANCELLED)))) is Dropped


def test_cancel_with_boolean_request_id_does_not_cancel_request_1(conn: Connection) -> None:
    conn.receive(request(1))
    event = only(conn.receive(notification(CANCELLED, {"requestId": True})))
    assert type(event) is Dropped
    assert conn.is_running(1)


def test_cancel_after_the_answer_is_dropped(conn: Connection) -> None:
    conn.receive(request(1))
    conn.respond(1, {})
    assert type(only(conn.receive(cancel(1)))) is Dropped


# ----------------------------------------------------------------------------- progress


def test_progress_is_mapped_to_its_request() -> None:
    c = Connection(Role.CLIENT)
    req = c.start_request("tools/call", {}, progress=True)
    token = req.params["_meta"]["progressToken"]  # type: ignore[index]
    params = {"progressToken": token, "progress": 1, "total": 4, "message": "m"}
    event = only(c.receive(notification(PROGRESS, params)))
    assert event == ProgressReceived(req.id, token, 1.0, 4.0, "m")
    event = only(c.receive(notification(PROGRESS, {"progressToken": token, "progress": 2.5})))
    assert event == ProgressReceived(req.id, token, 2.5, None, None)


@pytest.mark.parametrize(
    "params",
    [
        {"progressToken": 0, "progress": "1"},
        {"progressToken": 0, "progress": True},
        {"progressToken": 0},
    ],
)
def test_progress_without_numeric_progress_is_dropped(params: dict[str, Any]) -> None:
    c = Connection(Role.CLIENT)
    c.start_request("tools/call", {}, progress=True)
    assert type(only(c.receive(notification(PROGRESS, params)))) is Dropped


def test_progress_odd_total_and_message_are_ignored() -> None:
    c = Connection(Role.CLIENT)
    req = c.start_request("tools/call", {}, progress=True)
    params = {"progressToken": req.id, "progress": 1, "total": True, "message": 3}
    event = only(c.receive(notification(PROGRESS, params)))
    assert event == ProgressReceived(req.id, req.id, 1.0, None, None)


@pytest.mark.parametrize("token", [12345, "0", None])
def test_progress_for_unknown_token_is_dropped(token: Any) -> None:
    c = Connection(Role.CLIENT)
    c.start_request("tools/call", {}, progress=True)
    event = only(c.receive(notification(PROGRESS, {"progressToken": token, "progress": 1})))
    assert type(event) is Dropped


def test_progress_with_boolean_token_is_dropped() -> None:
    c = Connection(Role.CLIENT, first_id=1)
    req = c.start_request("tools/call", {}, progress=True)
    assert req.id == 1
    assert type(only(c.receive(notification(PROGRESS, {"progressToken": True, "progress": 1})))) is Dropped


def test_progress_after_the_response_is_dropped() -> None:
    c = Connection(Role.CLIENT)
    req = c.start_request("tools/call", {}, progress=True)
    c.receive(result(req.id))
    assert type(only(c.receive(notification(PROGRESS, {"progressToken": req.id, "progress": 1})))) is Dropped


def test_progress_without_token_request_is_dropped() -> None:
    c = Connection(Role.CLIENT)
    req = c.start_request("tools/call", {})
    assert type(only(c.receive(notification(PROGRESS, {"progressToken": req.id, "progress": 1})))) is Dropped


# ----------------------------------------------------------------------------- notifications


def test_other_notifications_pass_through(conn: Connection) -> None:
    event = only(conn.receive(notification("notifications/initialized")))
    assert event == NotificationReceived(Notification("notifications/initialized", None))
    event = only(conn.receive(notification("notifications/roots/list_changed", {"a": 1})))
    assert event == NotificationReceived(Notification("notifications/roots/list_changed", {"a": 1}))
    assert conn.running_incoming == 0


# ----------------------------------------------------------------------------- invalid input


def test_invalid_json_is_answered_with_parse_error(conn: Connection) -> None:
    event = only(conn.receive_data(b'{"jsonrpc": "2.0", "id": 1, "method": '))
    assert type(event) is SendReply
    assert event.message["id"] is None
    assert event.message["error"]["code"] == PARSE_ERROR
    assert conn.running_incoming == 0


@pytest.mark.parametrize("data", [b"42", b'"x"', b"null", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]'])
def test_non_object_is_answered_with_invalid_request(conn: Connection, data: bytes) -> None:
    event = only(conn.receive_data(data))
    assert type(event) is SendReply
    assert event.message["error"]["code"] == INVALID_REQUEST
    assert event.message["id"] is None
    assert conn.running_incoming == 0


def test_wrong_jsonrpc_echoes_the_id(conn: Connection) -> None:
    event = only(conn.receive({"jsonrpc": "1.0", "id": 12, "method": "ping"}))
    assert type(event) is SendReply
    assert event.message["id"] == 12
    assert event.message["error"]["code"] == INVALID_REQUEST
    assert conn.running_incoming == 0


def test_oversized_data_is_answered() -> None:
    small = Connection(Role.SERVER, max_message_bytes=40)
    event = only(small.receive_data(encode(request(1, "tools/call", {"text": "x" * 100}))))
    assert type(event) is SendReply
    assert event.message["error"]["code"] == INVALID_REQUEST
    assert event.message["id"] is None
    assert type(only(small.receive_data(b'{"jsonrpc":"2.0","id":2,"method":"p"}'))) is RequestReceived


def test_malformed_response_is_dropped_not_answered() -> None:
    c = Connection(Role.CLIENT)
    req = c.start_request("ping")
    event = only(c.receive({"jsonrpc": "2.0", "id": req.id, "result": "not an object"}))
    assert type(event) is Dropped
    assert c.pending_outgoing == 1


def test_notification_with_bad_params_is_dropped(conn: Connection) -> None:
    assert type(only(conn.receive(notification("n", [1])))) is Dropped  # type: ignore[arg-type]


def test_request_with_bad_params_is_answered_with_its_id(conn: Connection) -> None:
    event = only(conn.receive({"jsonrpc": "2.0", "id": 5, "method": "m", "params": [1]}))
    assert type(event) is SendReply
    assert event.message["id"] == 5
    assert event.message["error"]["code"] == INVALID_PARAMS
    assert conn.running_incoming == 0


def test_connection_still_works_after_bad_input(conn: Connection) -> None:
    for bad in (b"{", b"42", b"[]", b'{"jsonrpc":"1.0","id":1,"method":"ping"}'):
        conn.receive_data(bad)
    assert type(only(conn.receive_data(b'{"jsonrpc":"2.0","id":1,"method":"ping"}'))) is RequestReceived
    assert conn.respond(1, {}) == Response(1, {})


# ----------------------------------------------------------------------------- teardown


def test_fail_all_returns_pending_and_forgets_everything() -> None:
    c = Connection(Role.CLIENT)
    a = c.start_request("ping")
    b = c.start_request("tools/call", {}, progress=True)
    c.receive(request("in", "roots/list"))
    assert sorted(c.fail_all()) == sorted([a.id, b.id])
    assert c.pending_outgoing == 0
    assert c.running_incoming == 0
    assert type(only(c.receive(notification(PROGRESS, {"progressToken": b.id, "progress": 1})))) is Dropped
    assert c.fail_all() == []


def test_role_values() -> None:
    assert Role.CLIENT.value == "client"
    assert Role.SERVER.value == "server"
    assert Connection(Role.CLIENT).role is Role.CLIENT
