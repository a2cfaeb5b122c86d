"""The one inbound classifier: route or rejection, decided once per request, without I/O."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from elicitkit.protocol.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from elicitkit.protocol.inbound import (
    HANDSHAKE,
    Rejected,
    Stateless,
    classify_other,
    classify_request,
    refuses_streams,
    to_client,
)
from elicitkit.protocol.modern import Envelope
from elicitkit.protocol.versions import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
)

V2026 = "2026-07-28"


def params(version: str = V2026, **more: Any) -> dict[str, Any]:
    return {"_meta": {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {}}, **more}


def http(method: str, version: str = V2026, **more: str) -> dict[str, str]:
    return {"mcp-protocol-version": version, "mcp-method": method, **more}


def rejected(route: object, code: int, status: int) -> Rejected:
    assert isinstance(route, Rejected), route
    assert (route.error.code, route.status) == (code, status)
    return route


# -- off HTTP (stdio, in-memory): the body alone decides ------------------------------------


def test_a_request_without_envelope_is_a_handshake_request() -> None:
    assert classify_request("tools/list", {}) is HANDSHAKE
    assert classify_request("initialize", {"protocolVersion": "2025-11-25"}) is HANDSHAKE


def test_a_request_with_envelope_is_stateless_with_its_envelope_parsed() -> None:
    route = classify_request("tools/list", params())
    assert isinstance(route, Stateless)
    assert route.envelope is not None and route.envelope.protocol_version == V2026


def test_the_quickly_built_route_and_envelope_are_the_frozen_objects_their_classes_make() -> None:
    """classify_request builds both without the frozen dataclasses' __init__: the same objects."""
    meta = {META_PROTOCOL_VERSION: V2026, META_CLIENT_CAPABILITIES: {"elicitation": {}}}
    meta[META_CLIENT_INFO] = {"name": "c", "version": "1"}
    meta[META_LOG_LEVEL] = "info"
    route = classify_request("tools/call", {"_meta": meta, "name": "t"}, principal="alice")
    envelope = Envelope(V2026, {"elicitation": {}}, {"name": "c", "version": "1"}, "info")
    assert type(route) is Stateless and route == Stateless(envelope, "alice")
    assert type(route.envelope) is Envelope and repr(route.envelope) == repr(envelope)
    with pytest.raises(dataclasses.FrozenInstanceError):
        route.principal = "mallory"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        route.envelope.protocol_version = "2025-11-25"  # type: ignore[misc,union-attr]
    bare = classify_request("tools/call", params(name="t"))
    assert bare == Stateless(Envelope(V2026, {}, {}, None), None)


def test_a_stateless_session_refuses_what_has_no_envelope() -> None:
    rejected(classify_request("tools/list", {}, stateless=True), INVALID_PARAMS, 400)


@pytest.mark.parametrize(
    ("method", "body", "code", "status"),
    [
        ("tools/list", {"_meta": {META_PROTOCOL_VERSION: V2026}}, INVALID_PARAMS, 400),  # no capabilities
        ("tools/list", params("2099-01-01"), UNSUPPORTED_PROTOCOL_VERSION, 400),
        ("initialize", params(), METHOD_NOT_FOUND, 404),
        ("ping", params(), METHOD_NOT_FOUND, 404),
    ],
)
def test_2026_rejections_carry_their_code_and_status(method: str, body: dict[str, Any], code: int, status: int) -> None:
    rejected(classify_request(method, body), code, status)


# -- over HTTP: headers and the session id count too ----------------------------------------


def test_http_2026_request_with_matching_headers_is_stateless() -> None:
    assert isinstance(classify_request("tools/list", params(), headers=http("tools/list")), Stateless)


def test_http_header_mismatch_comes_before_the_version_check() -> None:
    # The body names an unsupported version and the header disagrees: -32020 wins (the ladder's order).
    route = classify_request("tools/list", params("2099-01-01"), headers=http("tools/list", V2026))
    rejected(route, HEADER_MISMATCH, 400)


def test_http_tool_header_params_are_looked_up_for_tools_call() -> None:
    body = params(name="book", arguments={"region": "eu"})
    looked_up: list[str] = []

    def header_params(name: str) -> dict[str, str]:
        looked_up.append(name)
        return {"region": "Region"}

    headers = http("tools/call", **{"mcp-name": "book"})
    rejected(classify_request("tools/call", body, headers=headers, header_params=header_params), HEADER_MISMATCH, 400)
    assert looked_up == ["book"]
    headers["mcp-param-region"] = "eu"
    assert isinstance(classify_request("tools/call", body, headers=headers, header_params=header_params), Stateless)


def test_http_2026_version_header_makes_a_request_stateless_even_without_envelope() -> None:
    rejected(classify_request("tools/list", {}, headers=http("tools/list")), INVALID_PARAMS, 400)


def test_http_unknown_version_header_without_session_is_treated_as_2026() -> None:
    rejected(classify_request("tools/list", {}, headers={"mcp-protocol-version": "2099-01-01"}), INVALID_PARAMS, 400)


def test_http_unknown_version_header_within_a_session_is_unsupported() -> None:
    headers = {"mcp-protocol-version": "2099-01-01", "mcp-session-id": "s"}
    route = rejected(classify_request("tools/list", {}, headers=headers), INVALID_REQUEST, 400)
    assert "unsupported MCP-Protocol-Version" in route.error.message


def test_http_handshake_requests_need_a_session_except_initialize() -> None:
    route = rejected(classify_request("tools/list", {}, headers={}), INVALID_REQUEST, 400)
    assert "Mcp-Session-Id" in route.error.message
    assert classify_request("initialize", {}, headers={}) is HANDSHAKE
    assert classify_request("tools/list", {}, headers={"mcp-session-id": "s"}) is HANDSHAKE
    assert classify_request("tools/list", {}, headers={"mcp-session-id": "s", "mcp-protocol-version": "2025-06-18"})


def test_http_notifications() -> None:
    assert classify_other(params(), {}) == Stateless(None)  # 2026: accepted, nothing serves it
    assert classify_other(None, {"mcp-session-id": "s"}) is HANDSHAKE
    rejected(classify_other(None, {}), INVALID_REQUEST, 400)
    rejected(classify_other(None, {"mcp-session-id": "s", "mcp-protocol-version": "1999-01-01"}), INVALID_REQUEST, 400)


def test_2026_clients_have_no_streams_to_open() -> None:
    assert refuses_streams({"mcp-protocol-version": V2026})
    assert not refuses_streams({"mcp-protocol-version": V2026, "mcp-session-id": "s"})
    assert not refuses_streams({"mcp-protocol-version": "2025-11-25"})


def test_answers_go_back_under_the_clients_id_with_their_status() -> None:
    answer, status = to_client({"jsonrpc": "2.0", "id": 7, "result": {}}, "client-1")
    assert (answer["id"], status) == ("client-1", 200)
    error = {"jsonrpc": "2.0", "id": 7, "error": {"code": METHOD_NOT_FOUND, "message": "no"}}
    answer, status = to_client(error, 3)
    assert (answer["id"], status) == (3, 404)
    assert error["id"] == 7  # the session's own message is left as it was
