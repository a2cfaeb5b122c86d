"""What OpenTelemetry a benchmark process runs with: ``ELICITKIT_BENCH_OTEL`` in its environment.

* ``absent``: as if the ``otel`` extra were not installed (``import opentelemetry`` fails);
* unset or ``off``: the extra installed, no SDK configured (what most users have);
* ``sdk``: the SDK with batch processors whose exporter encodes every batch to OTLP protobuf
  and drops it (the CPU of a real OTLP exporter, without a network or a collector to wait on),
  metrics with a periodic reader that does not fire during a run; telemetry switched on.

:func:`apply` runs first thing in the worker and in the server script, before elicitkit loads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

MODES = ("absent", "off", "sdk")


def mode() -> str:
    return os.environ.get("ELICITKIT_BENCH_OTEL") or "off"


def apply() -> None:
    chosen = mode()
    if chosen not in MODES:
        raise SystemExit(f"ELICITKIT_BENCH_OTEL must be one of {MODES}, not {chosen!r}")
    if chosen == "absent":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]  # every import of it fails
    elif chosen == "sdk":
        _configure_sdk()


def _configure_sdk() -> None:
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        MetricExporter,
        MetricExportResult,
        MetricsData,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from elicitkit.telemetry import hook

    class Spans(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            encode_spans(spans).SerializeToString()
            return SpanExportResult.SUCCESS

    class Logs(LogRecordExporter):
        def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
            encode_logs(batch).SerializeToString()
            return LogRecordExportResult.SUCCESS

        def shutdown(self) -> None:
            return None

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return True

    class Metrics(MetricExporter):
        def export(
            self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
        ) -> MetricExportResult:
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            return None

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Spans()))
    meter_provider = MeterProvider(metric_readers=[PeriodicExportingMetricReader(Metrics(), 3_600_000)])
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(Logs()))
    hook.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider, logger_provider=logger_provider)
