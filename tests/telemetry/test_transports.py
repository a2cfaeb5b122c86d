"""The other transports: in-memory (one process) and stdio through ``elicitkit serve --otel``
(the child configures the SDK from OTEL_* and exports to a loopback OTLP receiver), both eras."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind

from elicitkit import Client, Context, ElicitationResult, Server
from elicitkit.telemetry import names

from .conftest import Captured, child_of
from .receiver import otlp_receiver
from .test_traces import answer, build

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

SERVER = 2  # the OTLP span kind
SCRIPT = Path(__file__).with_name("_stdio_server.py")


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_in_memory(otel: Captured, mode: str) -> None:
    host = otel.tracer_provider.get_tracer("host")
    async with Client(build(), mode=mode, elicitation_callback=answer) as client:
        with host.start_as_current_span("host turn"):
            assert (await client.call_tool("book", {"date": "Friday"})).text == "Ada Secretname x4: accept"
    root = otel.one("host turn")
    calls = [s for s in otel.named("tools/call book") if s.kind is SpanKind.CLIENT]
    served = [s for s in otel.named("tools/call book") if s.kind is SpanKind.SERVER]
    assert len(calls) == len(served) == (1 if mode == "legacy" else 3)
    assert all(child_of(c, root) for c in calls)
    assert all(any(child_of(s, c) for c in calls) for s in served)
    answered = [e for s in served for e in otel.events(s, names.EVENT_ANSWERED)]
    assert [e[names.ELICITATION_KEY] for e in answered] == ["q1", "q2"]


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_stdio_with_serve_otel(otel: Captured, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    host = otel.tracer_provider.get_tracer("host")
    with otlp_receiver() as (endpoint, received):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "stdio-child")
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
        command = [sys.executable, "-m", "elicitkit.cli", "serve", f"{SCRIPT}:server", "--otel"]
        async with Client(command, mode=mode, elicitation_callback=answer) as client:
            with host.start_as_current_span("host turn"):
                assert (await client.call_tool("book", {"date": "Friday"})).text == "Ada Secretname x4"
        rounds = 1 if mode == "legacy" else 2
        received.wait(lambda r: len([s for s in r.spans if s.name == "tools/call book"]) == rounds)
    calls = {format(s.context.span_id, "016x") for s in otel.named("tools/call book") if s.kind is SpanKind.CLIENT}
    trace_id = format(otel.one("host turn").context.trace_id, "032x")
    served = [s for s in received.spans if s.name == "tools/call book"]
    assert all(s.kind == SERVER and s.parent_span_id in calls and s.trace_id == trace_id for s in served)
    assert {s.service for s in served} == {"stdio-child"}
    assert [e[names.ELICITATION_KEY] for s in served for n, e in s.events if n == names.EVENT_ANSWERED] == ["q1"]


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_a_url_question_has_its_events(otel: Captured, mode: str) -> None:
    server = Server("otel-url")

    @server.tool()
    async def pay(ctx: Context) -> str:
        outcome = await ctx.elicit_url("Pay the deposit", "https://pay.example.com/x", "pay-1")
        return outcome.action

    async def consent(request: object) -> ElicitationResult[None]:
        return ElicitationResult.accept()

    async with Client(server, mode=mode, elicitation_callback=consent) as client:
        assert (await client.call_tool("pay", {})).text == "accept"
    served = [s for s in otel.named("tools/call pay") if s.kind is SpanKind.SERVER]
    asked = [e for s in served for e in otel.events(s, names.EVENT_ASKED)]
    answered = [e for s in served for e in otel.events(s, names.EVENT_ANSWERED)]
    assert [(e[names.ELICITATION_MODE], e[names.ELICITATION_FIELDS]) for e in asked] == [("url", 0)]
    assert [(e[names.ELICITATION_MODE], e[names.ELICITATION_ACTION]) for e in answered] == [("url", "accept")]
    assert all("pay.example.com" not in str(e) for e in asked + answered)  # the URL is content: opt-in only
