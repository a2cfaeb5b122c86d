"""JSON-RPC 2.0 messages: decode, encode, parse, and the error object."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from elicitkit.protocol.errors import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    REQUEST_TIMEOUT,
    ConnectionClosed,
    MCPError,
    RequestTimeout,
)
from elicitkit.protocol.jsonrpc import (
    DEFAULT_MAX_MESSAGE_BYTES,
    ErrorResponse,
    InvalidMessage,
    Notification,
    Request,
    Response,
    decode,
    encode,
    parse,
)


def invalid(obj: Any) -> InvalidMessage:
    with pytest.raises(InvalidMessage) as info:
        parse(obj)
    return info.value


# ----------------------------------------------------------------------------- wire shapes


def test_request_to_wire_omits_missing_params() -> None:
    assert Request(1, "ping").to_wire() == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert Request("a", "tools/call", {"name": "x"}).to_wire() == {
        "jsonrpc": "2.0",
        "id": "a",
        "method": "tools/call",
        "params": {"name": "x"},
    }


def test_request_to_wire_keeps_empty_params() -> None:
    assert Request(1, "ping", {}).to_wire()["params"] == {}


def test_notification_to_wire_has_no_id() -> None:
    assert Notification("notifications/initialized").to_wire() == {
        "jsonrpc": "2.0",
        "method": "notifications/initialized",
    }
    wire = Notification("notifications/progress", {"progress": 1}).to_wire()
    assert "id" not in wire
    assert wire["params"] == {"progress": 1}


def test_response_and_error_to_wire() -> None:
    assert Response(3, {"ok": True}).to_wire() == {"jsonrpc": "2.0", "id": 3, "result": {"ok": True}}
    err = ErrorResponse(None, MCPError(PARSE_ERROR, "bad", {"at": 4})).to_wire()
    assert err == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad", "data": {"at": 4}}}


# ----------------------------------------------------------------------------- encode / decode


def test_encode_is_compact_single_line_utf8() -> None:
    data = encode({"jsonrpc": "2.0", "method": "x", "params": {"text": "line1\nline2 \u00e9\u4e2d"}})
    assert isinstance(data, bytes)
    assert b"\n" not in data
    assert b": " not in data and b", " not in data
    assert decode(data)["params"]["text"] == "line1\nline2 \u00e9\u4e2d"


@pytest.mark.parametrize("data", [b'{"a": 1}', '{"a": 1}', bytearray(b'{"a": 1}'), memoryview(b'{"a": 1}')])
def test_decode_accepts_bytes_like_and_str(data: Any) -> None:
    assert decode(data) == {"a": 1}


@pytest.mark.parametrize("data", [b"", b"{", b'{"a":}', b"nul", b"\xff\xfe", b'{"a": 1} {"b": 2}', b"NaN"])
def test_decode_invalid_json_is_parse_error_with_null_id(data: bytes) -> None:
    with pytest.raises(InvalidMessage) as info:
        decode(data)
    exc = info.value
    assert exc.error.code == PARSE_ERROR
    assert exc.reply is True
    wire = exc.to_wire()
    assert wire["jsonrpc"] == "2.0"
    assert wire["id"] is None
    assert wire["error"]["code"] == -32700


def test_decode_size_limit_is_inclusive() -> None:
    message = b'{"jsonrpc":"2.0","method":"x"}'
    assert decode(message, len(message)) == {"jsonrpc": "2.0", "method": "x"}
    with pytest.raises(InvalidMessage) as info:
        decode(message, len(message) - 1)
    assert info.value.error.code == INVALID_REQUEST
    assert str(len(message)) in info.value.error.message
    assert info.value.to_wire()["id"] is None


def test_decode_default_limit() -> None:
    assert DEFAULT_MAX_MESSAGE_BYTES == 4 * 1024 * 1024
    big = b'"' + b"x" * DEFAULT_MAX_MESSAGE_BYTES + b'"'
    with pytest.raises(InvalidMessage):
        decode(big)


# ----------------------------------------------------------------------------- parse: valid


def test_parse_request_int_and_str_ids() -> None:
    assert parse({"jsonrpc": "2.0", "id": 0, "method": "ping"}) == Request(0, "ping", None)
    assert parse({"jsonrpc": "2.0", "id": "abc", "method": "m", "params": {"a": 1}}) == Request("abc", "m", {"a": 1})
    assert parse({"jsonrpc": "2.0", "id": -5, "method": "m"}) == Request(-5, "m")
    assert parse({"jsonrpc": "2.0", "id": "", "method": "m"}) == Request("", "m")


def test_parse_notification() -> None:
    msg = parse({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert msg == Notification("notifications/initialized", None)
    msg = parse({"jsonrpc": "2.0", "method": "n", "params": {"x": [1]}})
    assert msg == Notification("n", {"x": [1]})


def test_parse_response_and_error_response() -> None:
    assert parse({"jsonrpc": "2.0", "id": 1, "result": {}}) == Response(1, {})
    msg = parse({"jsonrpc": "2.0", "id": "q", "error": {"code": -32601, "message": "nope", "data": [1]}})
    assert type(msg) is ErrorResponse
    assert msg.id == "q"
    assert (msg.error.code, msg.error.message, msg.error.data) == (METHOD_NOT_FOUND, "nope", [1])


def test_parse_error_response_with_null_id() -> None:
    msg = parse({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
    assert type(msg) is ErrorResponse
    assert msg.id is None
    assert msg.error.code == PARSE_ERROR


def test_parse_ignores_unknown_members() -> None:
    assert parse({"jsonrpc": "2.0", "id": 1, "method": "ping", "extra": True}) == Request(1, "ping")


def test_parse_roundtrips_to_wire() -> None:
    for message in (
        Request(7, "tools/call", {"name": "n"}),
        Notification("notifications/cancelled", {"requestId": 7}),
        Response(7, {"content": []}),
    ):
        assert parse(decode(encode(message.to_wire()))) == message


# ----------------------------------------------------------------------------- parse: invalid


@pytest.mark.parametrize("obj", [42, "x", None, True, 1.5])
def test_parse_non_object_is_invalid_request(obj: Any) -> None:
    exc = invalid(obj)
    assert exc.error.code == INVALID_REQUEST
    assert exc.reply is True
    assert exc.to_wire()["id"] is None


@pytest.mark.parametrize("obj", [[], [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]])
def test_parse_batch_is_rejected(obj: Any) -> None:
    exc = invalid(obj)
    assert exc.error.code == INVALID_REQUEST
    assert "batch" in exc.error.message
    assert exc.to_wire()["id"] is None


@pytest.mark.parametrize("version", ["1.0", "2", 2.0, None, ""])
def test_parse_wrong_jsonrpc_echoes_the_id(version: Any) -> None:
    obj: dict[str, Any] = {"id": "w1", "method": "ping"}
    if version is not None:
        obj["jsonrpc"] = version
    exc = invalid(obj)
    assert exc.error.code == INVALID_REQUEST
    assert exc.reply is True
    assert exc.to_wire()["id"] == "w1"


def test_parse_wrong_jsonrpc_without_usable_id_answers_null() -> None:
    exc = invalid({"jsonrpc": "1.0", "id": [1], "method": "ping"})
    assert exc.to_wire()["id"] is None


@pytest.mark.parametrize("bad_id", [None, 1.5, True, False, [1], {"a": 1}])
def test_parse_request_with_invalid_id(bad_id: Any) -> None:
    exc = invalid({"jsonrpc": "2.0", "id": bad_id, "method": "ping"})
    assert exc.error.code == INVALID_REQUEST
    assert exc.reply is True
    assert exc.to_wire()["id"] is None


@pytest.mark.parametrize("method", ["", 5, ["ping"], {"a": 1}])
def test_parse_bad_method(method: Any) -> None:
    exc = invalid({"jsonrpc": "2.0", "id": 3, "method": method})
    assert exc.error.code == INVALID_REQUEST
    assert exc.to_wire()["id"] == 3


@pytest.mark.parametrize("request_id", ["x", 7])
def test_defect_11_null_method_gets_invalid_request_with_the_id(request_id: Any) -> None:
    """Issue 12 #11: ``"method": null`` was taken for a malformed response and never answered."""
    exc = invalid({"jsonrpc": "2.0", "id": request_id, "method": None})
    assert exc.error.code == INVALID_REQUEST
    assert exc.reply is True
    assert exc.to_wire()["id"] == request_id


def test_defect_11_null_method_without_id_is_answered_with_null_id() -> None:
    exc = invalid({"jsonrpc": "2.0", "method": None})
    assert exc.error.code == INVALID_REQUEST
    assert exc.reply is True
    assert exc.to_wire()["id"] is None


@pytest.mark.parametrize("params", [[1, 2], "x", 5, True])
def test_parse_non_object_params_in_request(params: Any) -> None:
    exc = invalid({"jsonrpc": "2.0", "id": 4, "method": "m", "params": params})
    assert exc.error.code == INVALID_PARAMS
    assert exc.reply is True
    assert exc.to_wire()["id"] == 4


def test_parse_non_object_params_in_notification_is_not_answered() -> None:
    exc = invalid({"jsonrpc": "2.0", "method": "n", "params": [1]})
    assert exc.error.code == INVALID_PARAMS
    assert exc.reply is False


def test_parse_neither_method_nor_id() -> None:
    exc = invalid({"jsonrpc": "2.0", "result": {}})
    assert exc.error.code == INVALID_REQUEST
    assert exc.reply is True


@pytest.mark.parametrize(
    "obj",
    [
        {"jsonrpc": "2.0", "id": 1, "result": []},
        {"jsonrpc": "2.0", "id": 1, "result": "ok"},
        {"jsonrpc": "2.0", "id": None, "result": {}},
        {"jsonrpc": "2.0", "id": 1.5, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "error": "boom"},
        {"jsonrpc": "2.0", "id": 1, "error": {"message": "no code"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "-32600"}},
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": 1},
    ],
)
def test_parse_malformed_responses_are_never_answered(obj: dict[str, Any]) -> None:
    exc = invalid(obj)
    assert exc.error.code == INVALID_REQUEST
    assert exc.reply is False


# ----------------------------------------------------------------------------- MCPError


def test_mcp_error_defaults_and_wire_shape() -> None:
    err = MCPError(METHOD_NOT_FOUND)
    assert err.message == "Method not found"
    assert err.to_error() == {"code": -32601, "message": "Method not found"}
    assert "-32601" in str(err)
    assert MCPError(12345).message == "Error"
    assert MCPError(INVALID_PARAMS, "bad", {"field": "x"}).to_error() == {
        "code": -32602,
        "message": "bad",
        "data": {"field": "x"},
    }


def test_mcp_error_from_odd_wire_shapes() -> None:
    err = MCPError.from_error({"code": True, "message": 5, "data": None})
    assert (err.code, err.message, err.data) == (INTERNAL_ERROR, "Error", None)
    err = MCPError.from_error({"code": -32000, "message": "custom", "data": {"k": 1}})
    assert (err.code, err.message, err.data) == (-32000, "custom", {"k": 1})
    assert MCPError.from_error({}).code == INTERNAL_ERROR


def test_local_errors_are_outside_the_reserved_range() -> None:
    for code in (REQUEST_TIMEOUT, CONNECTION_CLOSED, REQUEST_CANCELLED):
        assert not -32768 <= code <= -32000
        assert MCPError(code).is_local
    assert not MCPError(INTERNAL_ERROR).is_local
    timeout = RequestTimeout("tools/call", 0.25)
    assert timeout.is_local and timeout.code == REQUEST_TIMEOUT
    assert (timeout.method, timeout.timeout) == ("tools/call", 0.25)
    assert "0.25" in timeout.message
    closed = ConnectionClosed("gone")
    assert closed.is_local and closed.message == "gone"
    assert isinstance(timeout, MCPError) and isinstance(closed, MCPError)


def test_error_response_wire_is_valid_json() -> None:
    wire = ErrorResponse(9, MCPError(INTERNAL_ERROR, "x")).to_wire()
    assert orjson.loads(encode(wire)) == wire


# ----------------------------------------------------------------------------- through a real server


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_defect_11_null_method_is_answered_by_a_stdio_server(tmp_path: Any) -> None:
    """The same frame through a spawned stdio server: an answer with the id, and the server lives on."""
    from kit.raw import spawn_stdio

    async with spawn_stdio(tmp_path) as child:
        await child.initialize()
        await child.write(b'{"jsonrpc":"2.0","id":"x","method":null}\n')
        answer = await child.recv()
        assert answer["id"] == "x"
        assert answer["error"]["code"] == INVALID_REQUEST
        await child.assert_ping()
