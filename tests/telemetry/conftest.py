"""Telemetry tests: an SDK with in-memory span, metric and log exporters, switched on for one
test and off after it (the global providers are never set, so no other test sees telemetry)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from elicitkit.telemetry import hook


@dataclass
class Captured:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    logs: InMemoryLogRecordExporter
    tracer_provider: TracerProvider

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, (name, [s.name for s in self.finished()])
        return found[0]

    def points(self, metric: str) -> list[Any]:
        """Every data point of ``metric`` (collected now)."""
        data = self.metrics.get_metrics_data()
        found: list[Any] = []
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        found.extend(m.data.data_points)
        return found

    def events(self, span: ReadableSpan, name: str) -> list[dict[str, Any]]:
        return [dict(e.attributes or {}) for e in span.events if e.name == name]


@pytest.fixture
def otel() -> Iterator[Captured]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    hook.instrument(
        capture_content=False,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
    )
    try:
        yield Captured(spans, reader, logs, tracer_provider)
    finally:
        hook.uninstrument()
        tracer_provider.shutdown()
        meter_provider.shutdown()
        logger_provider.shutdown()


def child_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    """``span``'s parent is ``parent`` (same trace, parent span id)."""
    assert span.parent is not None, f"{span.name} has no parent"
    return span.parent.span_id == parent.context.span_id and span.context.trace_id == parent.context.trace_id
