"""Byte framing: newline-delimited JSON (stdio) and Server-Sent Events (HTTP)."""

from __future__ import annotations

import pytest

from elicitkit.protocol.framing import LineFramer, Oversized, SSEEvent, SSEParser, sse_event


def feed_all(framer: LineFramer, chunks: list[bytes], *, eof: bool = False) -> list[bytes | Oversized]:
    out: list[bytes | Oversized] = []
    for chunk in chunks:
        out += framer.feed(chunk)
    if eof:
        out += framer.eof()
    return out


def splits(data: bytes) -> list[list[bytes]]:
    """Every way of cutting ``data`` in two, plus byte-by-byte."""
    cuts = [[data[:i], data[i:]] for i in range(len(data) + 1)]
    return [*cuts, [data[i : i + 1] for i in range(len(data))]]


# ----------------------------------------------------------------------------- LineFramer


def test_line_framer_one_and_many_lines() -> None:
    framer = LineFramer(100)
    assert framer.feed(b'{"a":1}\n') == [b'{"a":1}']
    assert framer.feed(b'{"a":2}\n{"a":3}\n{"a":') == [b'{"a":2}', b'{"a":3}']
    assert framer.feed(b"4}\n") == [b'{"a":4}']


def test_line_framer_strips_one_trailing_cr() -> None:
    framer = LineFramer(100)
    assert framer.feed(b"abc\r\n") == [b"abc"]
    assert framer.feed(b"ab") == []
    assert framer.feed(b"c\r\n") == [b"abc"]


def test_line_framer_skips_blank_lines() -> None:
    framer = LineFramer(100)
    assert framer.feed(b"\n\r\n   \n\t\nx\n\n") == [b"x"]


def test_line_framer_is_independent_of_chunking() -> None:
    stream = b'{"id":1}\n\n{"id":2}\r\n{"id":3}\n'
    expected = [b'{"id":1}', b'{"id":2}', b'{"id":3}']
    for chunks in splits(stream):
        assert feed_all(LineFramer(64), chunks) == expected, chunks


def test_line_framer_oversized_in_one_chunk_then_recovers() -> None:
    framer = LineFramer(10)
    out = framer.feed(b"x" * 25 + b"\n" + b"ok\n")
    assert out == [Oversized(25), b"ok"]


def test_line_framer_oversized_across_chunks_is_discarded_then_recovers() -> None:
    framer = LineFramer(10)
    assert framer.feed(b"x" * 8) == []
    assert framer.feed(b"y" * 8) == []  # now over the limit: discarding, nothing buffered
    assert framer.feed(b"z" * 100) == []
    assert framer.feed(b"zz\nnext\n") == [Oversized(118), b"next"]
    assert framer.feed(b"after\n") == [b"after"]


def test_line_framer_does_not_buffer_beyond_the_limit() -> None:
    framer = LineFramer(16)
    for _ in range(1000):
        framer.feed(b"x" * 1024)
    assert len(framer._buf) <= 16
    out = framer.feed(b"\n")
    assert out == [Oversized(1000 * 1024)]


def test_line_framer_limit_is_inclusive() -> None:
    framer = LineFramer(5)
    assert framer.feed(b"12345\n") == [b"12345"]
    assert framer.feed(b"123456\n") == [Oversized(6)]
    assert framer.feed(b"123") == []
    assert framer.feed(b"45\n") == [b"12345"]
    assert framer.feed(b"12345") == []
    assert framer.feed(b"\n") == [b"12345"]


def test_line_framer_crlf_line_at_the_limit_independent_of_chunking() -> None:
    assert LineFramer(5).feed(b"12345\r\n") == [b"12345"]
    framer = LineFramer(5)
    assert feed_all(framer, [b"12345\r", b"\n"]) == [b"12345"]


def test_line_framer_oversized_size_leaves_out_the_cr_however_chunked() -> None:
    # Found by the fuzz suite in CI: one byte at a time, the discarded \r was counted.
    stream = b"\x00" * 9 + b"\r\n"
    assert LineFramer(8).feed(stream) == [Oversized(9)]
    for chunks in splits(stream):
        assert feed_all(LineFramer(8), chunks) == [Oversized(9)], chunks


def test_line_framer_eof_applies_the_limit_and_the_cr_rule() -> None:
    assert feed_all(LineFramer(5), [b"123456"], eof=True) == [Oversized(6)]  # one byte of \r slack, no more
    assert feed_all(LineFramer(5), [b"12345\r"], eof=True) == [b"12345"]
    assert feed_all(LineFramer(4), [b"abcdefg", b"h\r"], eof=True) == [Oversized(8)]


def test_line_framer_eof_flushes_last_unterminated_frame() -> None:
    framer = LineFramer(100)
    assert framer.feed(b'{"a":1}\n{"b":') == [b'{"a":1}']
    assert framer.feed(b"2}") == []
    assert framer.eof() == [b'{"b":2}']
    assert framer.eof() == []


def test_line_framer_eof_with_nothing_or_whitespace() -> None:
    assert LineFramer(10).eof() == []
    framer = LineFramer(10)
    framer.feed(b"  \t")
    assert framer.eof() == []


def test_line_framer_eof_while_discarding_reports_oversized() -> None:
    framer = LineFramer(4)
    framer.feed(b"abcdefgh")
    assert framer.eof() == [Oversized(8)]
    assert framer.eof() == []


def test_line_framer_many_frames_in_one_big_chunk() -> None:
    lines = [f'{{"id":{i}}}'.encode() for i in range(500)]
    assert LineFramer(64).feed(b"\n".join(lines) + b"\n") == lines


# ----------------------------------------------------------------------------- SSEParser


def parse_events(chunks: list[bytes]) -> tuple[list[SSEEvent], SSEParser]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events, parser


def test_sse_single_event() -> None:
    events, parser = parse_events([b'data: {"a":1}\n\n'])
    assert events == [SSEEvent(data='{"a":1}', event="message", id=None, retry=None)]
    assert parser.last_event_id is None


def test_sse_multiline_data_is_joined() -> None:
    events, _ = parse_events([b"data: one\ndata: two\ndata:three\n\n"])
    assert [e.data for e in events] == ["one\ntwo\nthree"]


def test_sse_only_one_leading_space_is_stripped() -> None:
    events, _ = parse_events([b"data:  two spaces\n\n"])
    assert events[0].data == " two spaces"


def test_sse_comments_and_unknown_fields_ignored() -> None:
    events, _ = parse_events([b": keep-alive\n\n: stream open\nfoo: bar\ndata: x\n\n"])
    assert [e.data for e in events] == ["x"]


def test_sse_event_name_id_and_retry() -> None:
    events, parser = parse_events([b"event: custom\nid: r1/3\nretry: 2500\ndata: {}\n\n"])
    assert events == [SSEEvent(data="{}", event="custom", id="r1/3", retry=2500)]
    assert parser.last_event_id == "r1/3"
    assert parser.retry == 2500


def test_sse_event_type_resets_between_events() -> None:
    events, _ = parse_events([b"event: a\ndata: 1\n\ndata: 2\n\n"])
    assert [(e.event, e.data) for e in events] == [("a", "1"), ("message", "2")]


def test_sse_last_event_id_persists_but_event_id_is_per_event() -> None:
    events, parser = parse_events([b"id: 5\ndata: a\n\ndata: b\n\n"])
    assert [(e.data, e.id) for e in events] == [("a", "5"), ("b", None)]
    assert parser.last_event_id == "5"


def test_sse_priming_event_with_only_an_id_is_dispatched() -> None:
    events, parser = parse_events([b"id: r1/0\ndata: \n\n"])
    assert events == [SSEEvent(data="", event="message", id="r1/0", retry=None)]
    events, parser = parse_events([b"id: r2/0\n\n"])
    assert [(e.data, e.id) for e in events] == [("", "r2/0")]
    assert parser.last_event_id == "r2/0"


def test_sse_id_with_nul_is_ignored() -> None:
    events, parser = parse_events([b"id: good\ndata: a\n\nid: b\x00ad\ndata: b\n\n"])
    assert parser.last_event_id == "good"
    assert events[1].id is None


def test_sse_non_numeric_retry_is_ignored() -> None:
    events, parser = parse_events([b"retry: soon\ndata: a\n\nretry: -5\ndata: b\n\n"])
    assert parser.retry is None
    assert [e.retry for e in events] == [None, None]


def test_sse_retry_alone_is_dispatched_once() -> None:
    events, parser = parse_events([b"retry: 100\n\ndata: a\n\n"])
    assert [(e.data, e.retry) for e in events] == [("", 100), ("a", None)]
    assert parser.retry == 100


def test_sse_blank_lines_alone_dispatch_nothing() -> None:
    events, _ = parse_events([b"\n\n\r\n\r\r"])
    assert events == []


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_sse_all_line_endings(eol: bytes) -> None:
    stream = eol.join([b"id: 1", b"data: a", b"", b"data: b", b"data: c", b"", b": more"])
    events, _ = parse_events([stream])
    assert [(e.data, e.id) for e in events] == [("a", "1"), ("b\nc", None)]


def test_sse_cr_only_event_is_dispatched_without_waiting_for_more_bytes() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\r\r") == [SSEEvent(data="a")]
    assert parser.feed(b"\ndata: b\r\r") == [SSEEvent(data="b")]  # the LF after a CR is not a line of its own


def test_sse_is_independent_of_chunking() -> None:
    stream = (
        'id: r1/0\r\ndata: \r\n\r\nid: r1/1\r\ndata: {"t":"\u00e9\u4e2d"}\r\n\r\n: c\n\ndata: z\r\r: end\n'
    ).encode()
    expected, _ = parse_events([stream])
    assert [(e.data, e.id) for e in expected] == [("", "r1/0"), ('{"t":"\u00e9\u4e2d"}', "r1/1"), ("z", None)]
    for chunks in splits(stream):
        events, _ = parse_events(chunks)
        assert events == expected, chunks


def test_sse_crlf_split_across_chunks_counts_as_one_line_end() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n\r") == [SSEEvent(data="a")]  # \r\n, then a CR-only blank line
    assert parser.feed(b"\n") == []  # the LF completing that CR is not another blank line


def test_sse_incomplete_event_is_not_dispatched() -> None:
    events, _ = parse_events([b"data: a\n"])
    assert events == []


def test_sse_invalid_utf8_is_replaced_not_raised() -> None:
    events, _ = parse_events([b"data: \xff\n\n"])
    assert events[0].data == "\ufffd"


# ----------------------------------------------------------------------------- sse_event


def test_sse_event_encoding() -> None:
    assert sse_event('{"a":1}') == b'data: {"a":1}\n\n'
    assert sse_event(b"", event_id="r1/0") == b"id: r1/0\ndata: \n\n"
    assert sse_event(b"x", event_id="g/2", retry=500, event="message") == (
        b"event: message\nid: g/2\nretry: 500\ndata: x\n\n"
    )


def test_sse_event_roundtrips_through_parser() -> None:
    wire = b"".join(
        [
            sse_event(b"", event_id="r7/0", retry=1000),
            sse_event(b'{"jsonrpc":"2.0","method":"n"}', event_id="r7/1"),
            sse_event('{"jsonrpc":"2.0","id":1,"result":{}}', event_id="r7/2"),
        ]
    )
    events, parser = parse_events([wire])
    assert [(e.data, e.id, e.retry) for e in events] == [
        ("", "r7/0", 1000),
        ('{"jsonrpc":"2.0","method":"n"}', "r7/1", None),
        ('{"jsonrpc":"2.0","id":1,"result":{}}', "r7/2", None),
    ]
    assert parser.last_event_id == "r7/2"
    assert parser.retry == 1000


@pytest.mark.parametrize("value", ["\u00b2", "1\u00b2", "\u0663"])
def test_defect_framing_retry_with_a_non_ascii_digit_is_ignored(value: str) -> None:
    """``"\u00b2".isdigit()`` is true but ``int()`` refuses it: a hostile server crashed the SSE parser."""
    parser = SSEParser()
    events = parser.feed(f"retry: {value}\ndata: x\n\n".encode())
    assert [(e.data, e.retry) for e in events] == [("x", None)]
    assert parser.retry is None
