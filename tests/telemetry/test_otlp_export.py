"""Telemetry over the wire: the SDK's OTLP/HTTP exporters, behind a batch span processor and a
periodic metric reader, send to a receiver this test starts on loopback; what arrived is decoded
with opentelemetry-proto and checked."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from elicitkit import Client
from elicitkit.telemetry import hook, names
from elicitkit.transports.http.serve import serve_http_background

from .receiver import otlp_receiver
from .test_traces import answer, build

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

SERVER, CLIENT = 2, 3  # the OTLP span kinds


async def test_spans_metrics_and_logs_arrive_over_otlp_http() -> None:
    with otlp_receiver() as (endpoint, received):
        resource = Resource.create({"service.name": "otel-export-test"})
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics"), export_interval_millis=60_000
        )
        meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        logger_provider = LoggerProvider(resource=resource)
        logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{endpoint}/v1/logs"))
        )
        hook.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider, logger_provider=logger_provider)
        try:
            async with (
                serve_http_background(build(), port=0) as handle,
                Client(handle.url, mode="legacy", elicitation_callback=answer) as client,
            ):
                result = await client.call_tool("book", {"date": "Friday"})
            assert result.text == "Ada Secretname x4: accept"
        finally:
            hook.uninstrument()
            tracer_provider.shutdown()  # flushes the batch
            meter_provider.shutdown()  # a last collection and export
            logger_provider.shutdown()

        received.wait(lambda r: len(r.spans) >= 6 and names.METRIC_TIME_TO_ANSWER in r.metrics and len(r.logs) >= 4)
    assert {"/v1/traces", "/v1/metrics", "/v1/logs"} <= set(received.posts)
    by_kind = {(s.name, s.kind): s for s in received.spans}
    client_span = by_kind[("tools/call book", CLIENT)]
    server_span = by_kind[("tools/call book", SERVER)]
    assert server_span.parent_span_id == client_span.span_id and server_span.trace_id == client_span.trace_id
    assert server_span.service == "otel-export-test"
    assert server_span.attributes[names.GEN_AI_TOOL_NAME] == "book"
    assert server_span.attributes[names.MCP_PROTOCOL_VERSION] == "2025-11-25"
    events = [name for name, _ in server_span.events]
    assert events == [names.EVENT_ASKED, names.EVENT_ANSWERED, names.EVENT_ASKED, names.EVENT_ANSWERED]
    answered = [a for name, a in server_span.events if name == names.EVENT_ANSWERED]
    assert answered[0][names.ELICITATION_ACTION] == "accept" and answered[0][names.ELICITATION_FIELDS] == 2
    assert all("Secretname" not in str(a) for _, a in server_span.events)
    tta = received.metrics[names.METRIC_TIME_TO_ANSWER]
    assert sum(p.count for p in tta) == 2
    assert {p.attributes[0].key for p in tta} <= {names.ELICITATION_MODE, names.ELICITATION_ACTION}
    assert names.MCP_SERVER_OPERATION_DURATION in received.metrics
    assert [name for name, _ in received.logs].count(names.EVENT_ANSWERED) == 2
