"""JSON-RPC parsing and framing, without I/O: random and mutated input never escapes as a crash.

Invariants: :func:`parse` gives a message or :class:`InvalidMessage`, nothing else; a message
with a ``method`` member and a usable id is always answered (issue 12 #11 was one that was
not); the line framer and the SSE parser give the same frames however the bytes are chunked.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import event, given
from hypothesis import strategies as st

from elicitkit.protocol.errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from elicitkit.protocol.framing import LineFramer, Oversized, SSEEvent, SSEParser, sse_event
from elicitkit.protocol.jsonrpc import ErrorResponse, InvalidMessage, Notification, Request, Response, decode, parse

from ._budget import fuzz_settings
from ._strategies import json_values, messages, mutated


def _valid_id(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


@fuzz_settings(400)
@given(st.one_of(messages(), json_values))
def test_parse_gives_a_message_or_an_invalid_message(obj: Any) -> None:
    try:
        message = parse(obj)
    except InvalidMessage as exc:
        event(f"InvalidMessage {exc.error.code} reply={exc.reply}")
        assert exc.error.code in (INVALID_REQUEST, INVALID_PARAMS)
        wire = exc.to_wire()
        assert orjson.loads(orjson.dumps(wire)) == wire
        if isinstance(obj, dict) and "method" in obj and _valid_id(obj.get("id")):
            # A request-shaped message is always answered, with its id (issue 12 #11).
            assert exc.reply, obj
            if obj.get("jsonrpc") == "2.0":
                assert wire["id"] == obj["id"], (obj, wire)
        return
    event(type(message).__name__)
    assert isinstance(obj, dict) and obj.get("jsonrpc") == "2.0"
    if isinstance(message, Request):
        assert message.id == obj["id"] and message.method == obj["method"] and message.method
    elif isinstance(message, Notification):
        assert "id" not in obj and message.method == obj["method"]
    elif isinstance(message, Response):
        assert isinstance(message.result, dict) and message.id == obj["id"]
    else:
        assert isinstance(message, ErrorResponse)


@fuzz_settings(300)
@given(st.one_of(st.binary(max_size=200), messages().map(orjson.dumps).flatmap(mutated)))
def test_decode_gives_json_or_a_parse_error(data: bytes) -> None:
    try:
        value = decode(data)
    except InvalidMessage as exc:
        event("parse error")
        assert exc.error.code == PARSE_ERROR and exc.reply
        return
    try:
        event(type(parse(value)).__name__)
    except InvalidMessage as exc:
        event(f"decoded, then InvalidMessage {exc.error.code}")


@fuzz_settings(300)
@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
    st.lists(st.integers(1, 64), min_size=1, max_size=10),
    st.integers(8, 48),
)
def test_line_framer_is_independent_of_chunking(lines: list[bytes], tail: bytes, cuts: list[int], limit: int) -> None:
    stream = b"".join(line + b"\n" for line in lines) + tail
    one = LineFramer(limit)
    whole = one.feed(stream) + one.eof()
    framer = LineFramer(limit)
    pieces: list[bytes | Oversized] = []
    start = 0
    for cut in cuts * (len(stream) // max(sum(cuts), 1) + 1):
        pieces += framer.feed(stream[start : start + cut])
        start += cut
        if start >= len(stream):
            break
    pieces += framer.feed(stream[start:])
    pieces += framer.eof()
    assert pieces == whole
    expected: list[bytes | Oversized] = []
    for line in [*lines, tail]:
        content = line[:-1] if line.endswith(b"\r") else line
        if len(content) > limit:
            expected.append(Oversized(len(content)))
        elif content.strip():
            expected.append(content)
    assert whole == expected


event_data = st.text(max_size=30).map(lambda t: t.replace("\n", " ").replace("\r", " "))


@fuzz_settings(200)
@given(
    st.lists(
        st.tuples(event_data, st.none() | st.text("abc123", max_size=5), st.none() | st.integers(0, 9999)),
        max_size=6,
    ),
    st.lists(st.integers(1, 17), min_size=1, max_size=6),
)
def test_sse_round_trip_is_independent_of_chunking(
    events: list[tuple[str, str | None, int | None]], cuts: list[int]
) -> None:
    stream = b"".join(sse_event(data, event_id=eid, retry=retry) for data, eid, retry in events)
    parser = SSEParser()
    got: list[SSEEvent] = []
    start = 0
    while start < len(stream):
        cut = cuts[start % len(cuts)]
        got += parser.feed(stream[start : start + cut])
        start += cut
    assert [(e.data, e.id, e.retry) for e in got] == [(d, i, r) for d, i, r in events]


@fuzz_settings(250)
@given(st.lists(st.binary(max_size=60), max_size=6))
def test_sse_parser_takes_any_bytes(chunks: list[bytes]) -> None:
    parser = SSEParser()
    for chunk in chunks:
        for item in parser.feed(chunk):
            assert isinstance(item.data, str)
            assert item.retry is None or isinstance(item.retry, int)
