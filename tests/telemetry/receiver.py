"""A small OTLP/HTTP receiver for tests: an aiohttp app on a loopback port, in a thread of its
own (an exporter's flush blocks the thread that calls it), decoding what arrives with the
protobuf classes of opentelemetry-proto."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PROTOBUF = "application/x-protobuf"


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind is not None else None


def attrs(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items}


@dataclass
class Span:
    """One received span, decoded to what tests compare."""

    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    service: str


@dataclass
class Received:
    spans: list[Span] = field(default_factory=list)
    metrics: dict[str, list[Any]] = field(default_factory=dict)  # name -> data points
    logs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (event name, attributes)
    posts: list[str] = field(default_factory=list)  # the paths posted to, with a non-protobuf type refused
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait(self, ready: Callable[[Received], bool], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if ready(self):
                    return
            time.sleep(0.05)
        raise AssertionError(f"not received in {timeout}s: {[s.name for s in self.spans]} {list(self.metrics)}")


def _collector(
    received: Received, request_type: Any, response_type: Any, take: Callable[[Any], None]
) -> Callable[[web.Request], Any]:
    """An OTLP/HTTP endpoint: protobuf only (415 otherwise), ``take`` the message under the lock."""

    async def endpoint(request: web.Request) -> web.Response:
        if request.content_type != PROTOBUF:
            return web.Response(status=415)
        message = request_type.FromString(await request.read())
        with received.lock:
            received.posts.append(request.path)
            take(message)
        return web.Response(body=response_type().SerializeToString(), content_type=PROTOBUF)

    return endpoint


def _app(received: Received) -> web.Application:
    def spans(message: Any) -> None:
        for resource_spans in message.resource_spans:
            service = str(attrs(resource_spans.resource.attributes).get("service.name", ""))
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.spans.append(
                        Span(
                            span.name,
                            span.kind,
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            span.parent_span_id.hex(),
                            attrs(span.attributes),
                            [(e.name, attrs(e.attributes)) for e in span.events],
                            service,
                        )
                    )

    def points(message: Any) -> None:
        for resource_metrics in message.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    found = list(getattr(metric, kind).data_points) if kind else []
                    received.metrics.setdefault(metric.name, []).extend(found)

    def records(message: Any) -> None:
        for resource_logs in message.resource_logs:
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    received.logs.append((record.event_name, attrs(record.attributes)))

    app = web.Application()
    app.router.add_post(
        "/v1/traces", _collector(received, ExportTraceServiceRequest, ExportTraceServiceResponse, spans)
    )
    app.router.add_post(
        "/v1/metrics", _collector(received, ExportMetricsServiceRequest, ExportMetricsServiceResponse, points)
    )
    app.router.add_post("/v1/logs", _collector(received, ExportLogsServiceRequest, ExportLogsServiceResponse, records))
    return app


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, Received]]:
    """``(endpoint, received)``: the base URL to export to (``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
    received = Received()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    box: dict[str, Any] = {}

    async def start() -> None:
        runner = web.AppRunner(_app(received), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        box["runner"] = runner
        box["port"] = runner.addresses[0][1]
        started.set()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()
        loop.run_until_complete(box["runner"].cleanup())
        loop.close()

    thread = threading.Thread(target=serve, name="otlp-receiver", daemon=True)
    thread.start()
    assert started.wait(10), "the OTLP receiver did not start"
    try:
        yield f"http://127.0.0.1:{box['port']}", received
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
