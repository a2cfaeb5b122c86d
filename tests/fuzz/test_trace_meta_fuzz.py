"""Hostile trace context in ``params._meta``: whatever a peer puts under ``traceparent``,
``tracestate`` and ``baggage`` (or in place of ``_meta``), the request is served as it would be
without telemetry, its SERVER span ends, and a parent is taken only from a well-formed
``traceparent``; a relayed message is relayed whatever its shape."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import anyio
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from elicitkit.telemetry.otel import OTel

from ._budget import fuzz_settings

SPANS = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(SPANS))
TEL = OTel(tracer_provider=PROVIDER)
WELL_FORMED = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=80),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
headerish = st.text(alphabet="0123456789abcdef-=,; ", max_size=70) | st.text(max_size=70)
traceparents = (
    st.builds(
        lambda t, s, f: f"00-{t}-{s}-{f}",
        st.text("0123456789abcdef", min_size=32, max_size=32),
        st.text("0123456789abcdef", min_size=16, max_size=16),
        st.sampled_from(["00", "01", "03", "ff"]),
    )
    | headerish
    | json_values
)
metas = (
    st.fixed_dictionaries(
        {},
        optional={
            "traceparent": traceparents,
            "tracestate": headerish | json_values,
            "baggage": headerish | json_values,
        },
    )
    | json_values
)


@dataclass
class Incoming:
    id: int
    method: str
    params: Any


@given(meta=metas, method=st.sampled_from(["tools/call", "prompts/get", "resources/read", "x/y"]))
@fuzz_settings(300)
def test_any_meta_is_served_and_parents_only_a_valid_traceparent(meta: Any, method: str) -> None:
    SPANS.clear()

    async def handler(request: Incoming) -> dict[str, Any]:
        return {"ok": True}

    params = {"name": "book", "uri": "memo://x", "_meta": meta}
    result = anyio.run(TEL.serve, Incoming(7, method, params), handler)
    assert result == {"ok": True}
    parent = meta.get("traceparent") if isinstance(meta, dict) else None
    match = WELL_FORMED.fullmatch(parent) if isinstance(parent, str) else None
    spans = SPANS.get_finished_spans()
    if match is not None and int(parent[-2:], 16) & 1 == 0 and int(match.group(1), 16) and int(match.group(2), 16):
        assert spans == ()  # a valid parent that was not sampled: nor is this span (parent-based sampling)
        return
    (span,) = spans
    if span.parent is not None:
        assert match is not None
        assert format(span.parent.trace_id, "032x") == match.group(1)
        assert format(span.parent.span_id, "016x") == match.group(2)


@given(
    body=json_values
    | st.fixed_dictionaries({"method": json_values, "params": json_values})
    | st.fixed_dictionaries(
        {"method": st.text(max_size=20), "params": st.dictionaries(st.text(max_size=8), json_values)}
    )
)
@fuzz_settings(200)
def test_any_relayed_message_is_relayed(body: Any) -> None:
    span, relayed = TEL.relay_start("message", body)
    TEL.relay_end(span, 202)
    if isinstance(body, dict) and isinstance(body.get("method"), str) and isinstance(body.get("params"), dict):
        assert "traceparent" in relayed["params"]["_meta"]
        assert {k: v for k, v in relayed.items() if k != "params"} == {k: v for k, v in body.items() if k != "params"}
    else:
        assert relayed == body
