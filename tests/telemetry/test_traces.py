"""Spans, events and metrics with the SDK's in-memory exporters: names, attributes and parent
links for a 2025 form question over HTTP and a 2026 round trip of two rounds; the host's span,
our client span and the server span are one trace."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

from elicitkit import Client, Context, ElicitationResult, Server
from elicitkit.elicitation.requests import ElicitRequest
from elicitkit.telemetry import hook, names
from elicitkit.transports.http.serve import serve_http_background

from .conftest import Captured, child_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


class Booking(BaseModel):
    name: str
    guests: int


class Confirm(BaseModel):
    ok: bool


def build() -> Server:
    server = Server("otel-test")

    @server.tool()
    async def book(ctx: Context, date: str) -> str:
        """Two questions: who, then a confirmation."""
        who = await ctx.elicit(f"Book a table on {date}?", Booking)
        if who.action != "accept" or who.data is None:
            return who.action
        sure = await ctx.elicit(f"Confirm {who.data.guests} guests for {who.data.name}?", Confirm)
        return f"{who.data.name} x{who.data.guests}: {sure.action}"

    @server.tool()
    async def broken() -> str:
        raise ValueError("boom")

    return server


async def answer(request: ElicitRequest) -> ElicitationResult[Any]:
    if "guests" in request.message:
        return ElicitationResult.accept({"ok": True})
    return ElicitationResult.accept({"name": "Ada Secretname", "guests": 4})


def _assert_no_content(otel: Captured) -> None:
    """No message text and no answer value anywhere: spans, events, log records."""
    for span in otel.finished():
        blobs = [str(span.attributes)] + [str(e.attributes) for e in span.events]
        assert not any("Secretname" in b or "Book a table" in b for b in blobs), span.name
    for record in otel.logs.get_finished_logs():
        assert "Secretname" not in str(record.log_record.attributes)
        assert "Book a table" not in str(record.log_record.attributes)


async def test_a_2025_form_question_over_http(otel: Captured) -> None:
    host = otel.tracer_provider.get_tracer("host")
    async with (
        serve_http_background(build(), port=0) as handle,
        Client(handle.url, mode="legacy", elicitation_callback=answer) as client,
    ):
        with host.start_as_current_span("host turn"):
            result = await client.call_tool("book", {"date": "Friday"})
    assert result.text == "Ada Secretname x4: accept"

    root = otel.one("host turn")
    client_span = next(s for s in otel.named("tools/call book") if s.kind is SpanKind.CLIENT)
    server_span = next(s for s in otel.named("tools/call book") if s.kind is SpanKind.SERVER)
    assert child_of(client_span, root) and child_of(server_span, client_span)
    for span in (client_span, server_span):
        assert span.attributes is not None
        assert span.attributes[names.MCP_METHOD_NAME] == "tools/call"
        assert span.attributes[names.GEN_AI_TOOL_NAME] == "book"
        assert span.attributes[names.GEN_AI_OPERATION_NAME] == "execute_tool"
        assert span.attributes[names.JSONRPC_REQUEST_ID] == str(span.attributes[names.JSONRPC_REQUEST_ID])
        assert names.ERROR_TYPE not in span.attributes
    assert server_span.attributes is not None
    assert server_span.attributes[names.MCP_PROTOCOL_VERSION] == "2025-11-25"
    assert server_span.attributes[names.MCP_SESSION_ID] == client.transport.session_id  # type: ignore[attr-defined]
    assert server_span.attributes[names.NETWORK_TRANSPORT] == "tcp"
    assert server_span.attributes[names.NETWORK_PROTOCOL_NAME] == "http"
    assert client_span.attributes is not None
    assert client_span.attributes[names.JSONRPC_REQUEST_ID] == server_span.attributes[names.JSONRPC_REQUEST_ID]
    assert client_span.attributes[names.MCP_PROTOCOL_VERSION] == "2025-11-25"

    # the server's questions: CLIENT spans under the server span, the client's SERVER spans under them
    asks = [s for s in otel.named("elicitation/create") if s.kind is SpanKind.CLIENT]
    takes = [s for s in otel.named("elicitation/create") if s.kind is SpanKind.SERVER]
    assert len(asks) == 2 and len(takes) == 2
    for ask in asks:
        assert child_of(ask, server_span)
        assert (
            ask.attributes is not None
            and ask.attributes[names.MCP_SESSION_ID] == server_span.attributes[names.MCP_SESSION_ID]
        )
        assert ask.attributes[names.MCP_PROTOCOL_VERSION] == "2025-11-25"
        assert any(child_of(take, ask) for take in takes)

    asked = otel.events(server_span, names.EVENT_ASKED)
    answered = otel.events(server_span, names.EVENT_ANSWERED)
    assert [e[names.ELICITATION_KEY] for e in asked] == ["q1", "q2"]
    assert [e[names.ELICITATION_FIELDS] for e in asked] == [2, 1]
    first = answered[0]
    assert first[names.ELICITATION_MODE] == "form" and first[names.ELICITATION_ACTION] == "accept"
    assert first[names.ELICITATION_ERA] == "2025-11-25" and first[names.ELICITATION_ROUND] == 1
    assert first[names.ELICITATION_ORIGIN] == "call" and first[names.ELICITATION_SIDE] == "server"
    assert 0 <= first[names.ELICITATION_TIME_TO_ANSWER] < 30
    _assert_no_content(otel)

    # the same event model as log records
    logged = [r.log_record for r in otel.logs.get_finished_logs()]
    assert [r.event_name for r in logged].count(names.EVENT_ANSWERED) == 2
    assert {r.log_record.trace_id for r in otel.logs.get_finished_logs()} == {root.context.trace_id}

    ttas = otel.points(names.METRIC_TIME_TO_ANSWER)
    assert sum(p.count for p in ttas) == 2
    assert {(p.attributes[names.ELICITATION_MODE], p.attributes[names.ELICITATION_ACTION]) for p in ttas} == {
        ("form", "accept")
    }
    questions = otel.points(names.METRIC_QUESTIONS_PER_CALL)
    assert [(p.count, p.sum) for p in questions] == [(1, 2)]
    rounds = otel.points(names.METRIC_ROUNDS_PER_CALL)
    assert [(p.count, p.sum) for p in rounds] == [(1, 1)]
    open_now = otel.points(names.METRIC_OPEN_QUESTIONS)
    assert sum(p.value for p in open_now) == 0  # two put, two answered
    server_ops = {
        p.attributes[names.MCP_METHOD_NAME]: p.count for p in otel.points(names.MCP_SERVER_OPERATION_DURATION)
    }
    assert server_ops["tools/call"] == 1 and server_ops["initialize"] == 1
    client_ops = {
        p.attributes[names.MCP_METHOD_NAME]: p.count for p in otel.points(names.MCP_CLIENT_OPERATION_DURATION)
    }
    assert client_ops["tools/call"] == 1 and client_ops["elicitation/create"] == 2
    assert sum(p.count for p in otel.points(names.MCP_CLIENT_SESSION_DURATION)) == 1
    assert sum(p.count for p in otel.points(names.MCP_SERVER_SESSION_DURATION)) >= 1


async def test_a_2026_round_trip_of_two_rounds(otel: Captured) -> None:
    host = otel.tracer_provider.get_tracer("host")
    async with (
        serve_http_background(build(), port=0) as handle,
        Client(handle.url, mode="modern", elicitation_callback=answer) as client,
    ):
        with host.start_as_current_span("host turn"):
            result = await client.call_tool("book", {"date": "Friday"})
    assert result.text == "Ada Secretname x4: accept"

    root = otel.one("host turn")
    clients = sorted(
        (s for s in otel.named("tools/call book") if s.kind is SpanKind.CLIENT), key=lambda s: s.start_time or 0
    )
    servers = sorted(
        (s for s in otel.named("tools/call book") if s.kind is SpanKind.SERVER), key=lambda s: s.start_time or 0
    )
    assert len(clients) == 3 and len(servers) == 3  # first try, then one retry per question
    for client_span, server_span in zip(clients, servers, strict=True):
        assert child_of(client_span, root) and child_of(server_span, client_span)
        assert server_span.attributes is not None
        assert server_span.attributes[names.MCP_PROTOCOL_VERSION] == "2026-07-28"
    assert [s.attributes[names.CALL_ROUND] for s in servers if s.attributes] == [1, 2, 3]
    assert [s.attributes.get("elicitkit.result_type") for s in servers if s.attributes] == [
        "input_required",
        "input_required",
        None,
    ]

    # round 1 puts q1; round 2 takes q1 and puts q2; round 3 takes q2 (q1 is replayed from the state, not again)
    assert [e[names.ELICITATION_KEY] for e in otel.events(servers[0], names.EVENT_ASKED)] == ["q1"]
    assert otel.events(servers[0], names.EVENT_ANSWERED) == []
    took = otel.events(servers[1], names.EVENT_ANSWERED)
    assert [(e[names.ELICITATION_KEY], e[names.ELICITATION_ACTION], e[names.ELICITATION_ROUND]) for e in took] == [
        ("q1", "accept", 2)
    ]
    assert took[0][names.ELICITATION_ERA] == "2026-07-28" and took[0][names.ELICITATION_FIELDS] == 2
    assert took[0][names.ELICITATION_TIME_TO_ANSWER] >= 0  # timed across requests by the sealed state
    assert [e[names.ELICITATION_KEY] for e in otel.events(servers[1], names.EVENT_ASKED)] == ["q2"]
    assert [e[names.ELICITATION_KEY] for e in otel.events(servers[2], names.EVENT_ANSWERED)] == ["q2"]
    assert otel.events(servers[2], names.EVENT_ASKED) == []
    _assert_no_content(otel)

    assert [(p.count, p.sum) for p in otel.points(names.METRIC_ROUNDS_PER_CALL)] == [(1, 3)]
    assert [(p.count, p.sum) for p in otel.points(names.METRIC_QUESTIONS_PER_CALL)] == [(1, 2)]
    assert sum(p.count for p in otel.points(names.METRIC_TIME_TO_ANSWER)) == 2


async def test_errors_and_opted_in_content(otel: Captured) -> None:
    hook.current.capture_content = True  # type: ignore[union-attr]
    async with (
        serve_http_background(build(), port=0) as handle,
        Client(handle.url, mode="legacy", elicitation_callback=answer) as client,
    ):
        failed = await client.call_tool("broken", {})
        assert failed.is_error
        await client.call_tool("book", {"date": "Friday"})
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool("nope", {})
    broken = next(s for s in otel.named("tools/call broken") if s.kind is SpanKind.SERVER)
    assert broken.attributes is not None and broken.attributes[names.ERROR_TYPE] == "tool_error"
    assert broken.status.status_code is StatusCode.ERROR
    unknown = next(s for s in otel.named("tools/call nope") if s.kind is SpanKind.CLIENT)
    assert unknown.attributes is not None
    assert unknown.attributes[names.ERROR_TYPE] == "-32602" == unknown.attributes[names.RPC_RESPONSE_STATUS_CODE]
    server_span = next(s for s in otel.named("tools/call book") if s.kind is SpanKind.SERVER)
    took = otel.events(server_span, names.EVENT_ANSWERED)[0]
    assert took[names.ELICITATION_MESSAGE] == "Book a table on Friday?"
    assert "Ada Secretname" in took[names.ELICITATION_CONTENT]


@pytest.mark.parametrize("on", [True, False], ids=["on", "off"])
async def test_trace_context_rides_in_meta_only_when_on(otel: Captured, on: bool) -> None:
    if not on:
        hook.uninstrument()
    seen: list[dict[str, Any]] = []
    server = build()

    @server.tool()
    async def meta(ctx: Context) -> str:
        seen.append(dict(ctx.meta))
        return "ok"

    async with (
        serve_http_background(server, port=0) as handle,
        Client(handle.url, mode="legacy", elicitation_callback=answer) as client,
    ):
        await client.call_tool("meta", {})
    if on:
        client_span = next(s for s in otel.named("tools/call meta") if s.kind is SpanKind.CLIENT)
        trace_id = format(client_span.context.trace_id, "032x")
        span_id = format(client_span.context.span_id, "016x")
        assert seen[0]["traceparent"].startswith(f"00-{trace_id}-{span_id}-")
    else:
        assert "traceparent" not in seen[0]
        assert otel.finished() == []
