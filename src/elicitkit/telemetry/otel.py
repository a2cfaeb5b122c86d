"""The OpenTelemetry side of :mod:`elicitkit.telemetry`: spans, metrics and log records.

Imported only by :func:`~elicitkit.telemetry.hook.instrument`. Spans follow the MCP semantic
conventions (a CLIENT span per request sent, by either side; a SERVER span per request
served, its parent read from ``params._meta``), and trace context is written into every
request's ``params._meta`` (``traceparent``, ``tracestate``, ``baggage``), so a host's span,
our client span and the server span are one trace on every era and transport.

A question is not a span of its own: on 2026-07-28 it is put in one HTTP request and answered
in a later one (or, for a task, after a restart), so no process holds it open in between.
It is two events instead (``asked``, ``answered``, with the time to answer) on the span of
the request that put or took it, the same event as a log record, and the metrics below.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry._logs import LoggerProvider, LogRecord, SeverityNumber, get_logger
from opentelemetry.metrics import Histogram

from elicitkit.protocol.errors import MCPError
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.telemetry import names
from elicitkit.telemetry.events import QuestionEvent

__all__ = ["OTel"]

SCOPE = "elicitkit"
_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
_ANSWER_BUCKETS = (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 14400, 86400)
_COUNT_BUCKETS = (0, 1, 2, 3, 4, 5, 7, 10, 15, 20, 50)


def _target(method: str, params: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The span name (``{method} {target}``) and the attributes that name the target."""
    attrs: dict[str, Any] = {names.MCP_METHOD_NAME: method}
    if not params:
        return method, attrs
    if method == "tools/call":
        name = params.get("name")
        if isinstance(name, str):
            attrs[names.GEN_AI_TOOL_NAME] = name
            attrs[names.GEN_AI_OPERATION_NAME] = "execute_tool"
            return f"{method} {name}", attrs
    elif method == "prompts/get":
        name = params.get("name")
        if isinstance(name, str):
            attrs[names.GEN_AI_PROMPT_NAME] = name
            return f"{method} {name}", attrs
    elif method.startswith("resources/") or method == "notifications/resources/updated":
        uri = params.get("uri")
        if isinstance(uri, str):
            attrs[names.MCP_RESOURCE_URI] = uri  # an attribute only: never in the name (cardinality)
    meta = params.get("_meta")
    if isinstance(meta, dict):
        version = meta.get("io.modelcontextprotocol/protocolVersion")
        if isinstance(version, str):
            attrs[names.MCP_PROTOCOL_VERSION] = version
    return method, attrs


def _parent(meta: Any) -> otel_context.Context | None:
    """The remote parent in a peer's ``_meta``: only string values under the propagation keys
    reach the propagators (a peer may put anything there), and a propagator that still fails
    costs the parent, never the request."""
    if not isinstance(meta, dict):
        return None
    carrier = {key: value for key in names.PROPAGATION_KEYS if isinstance(value := meta.get(key), str)}
    if not carrier:
        return None
    try:
        return propagate.extract(carrier)
    except Exception:
        return None


def _error_attrs(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, MCPError):
        return {names.ERROR_TYPE: str(exc.code), names.RPC_RESPONSE_STATUS_CODE: str(exc.code)}
    return {names.ERROR_TYPE: type(exc).__qualname__}


def _result_attrs(result: Any) -> dict[str, Any]:
    if isinstance(result, dict):
        if result.get("isError") is True:
            return {names.ERROR_TYPE: "tool_error"}
        if result.get("resultType") == "input_required":
            return {"elicitkit.result_type": "input_required"}
    return {}


def _histogram(meter: metrics.Meter, name: str, unit: str, buckets: Sequence[float], description: str) -> Histogram:
    """A histogram in seconds or counts, with the bucket boundaries its values call for."""
    return meter.create_histogram(name, unit=unit, description=description, explicit_bucket_boundaries_advisory=buckets)


class OTel:
    """The live telemetry (``hook.current``). Every method is called only while it is on."""

    def __init__(
        self,
        *,
        capture_content: bool = False,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
    ) -> None:
        self.capture_content = capture_content
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, meter_provider=meter_provider)
        self.logger = get_logger(SCOPE, logger_provider=logger_provider)
        self.client_duration = _histogram(
            meter,
            names.MCP_CLIENT_OPERATION_DURATION,
            "s",
            _SECONDS_BUCKETS,
            "How long an MCP request took, as the side that sent it saw it.",
        )
        self.server_duration = _histogram(
            meter, names.MCP_SERVER_OPERATION_DURATION, "s", _SECONDS_BUCKETS, "How long an MCP request took to serve."
        )
        self.session_duration = {
            role: _histogram(meter, name, "s", _SECONDS_BUCKETS, "How long an MCP session lasted.")
            for role, name in (
                ("client", names.MCP_CLIENT_SESSION_DURATION),
                ("server", names.MCP_SERVER_SESSION_DURATION),
            )
        }
        self.time_to_answer = _histogram(
            meter,
            names.METRIC_TIME_TO_ANSWER,
            "s",
            _ANSWER_BUCKETS,
            "From a question put to its answer (by mode and action).",
        )
        self.questions_per_call = _histogram(
            meter,
            names.METRIC_QUESTIONS_PER_CALL,
            "{question}",
            _COUNT_BUCKETS,
            "Questions one call asked, over all its rounds.",
        )
        self.rounds_per_call = _histogram(
            meter,
            names.METRIC_ROUNDS_PER_CALL,
            "{round}",
            _COUNT_BUCKETS,
            "Requests one 2026-07-28 call took (1: no question).",
        )
        self.open_questions = meter.create_up_down_counter(
            names.METRIC_OPEN_QUESTIONS, unit="{question}", description="Questions put and not answered yet."
        )
        self.waiting_tasks = meter.create_up_down_counter(
            names.METRIC_WAITING_TASKS, unit="{task}", description="Tasks waiting for input (input_required)."
        )
        self.page_fallbacks = meter.create_counter(
            names.METRIC_PAGE_FALLBACKS, unit="{question}", description="Questions that went to the server's page."
        )
        self.fleet_relays = meter.create_counter(
            names.METRIC_FLEET_RELAYS,
            unit="{message}",
            description="Messages relayed to the instance owning a session.",
        )

    # -- requests out: a CLIENT span, context into params._meta

    def client_start(
        self, method: str, params: dict[str, Any] | None, known: dict[str, Any] | None = None
    ) -> tuple[trace.Span, dict[str, Any], float]:
        """Start the span of a request about to be sent; the params to send (with ``_meta``).
        ``known``: what the sending side knows of its session (protocol version, session id)."""
        name, attrs = _target(method, params)
        if known:
            attrs = {**known, **attrs}
        span = self.tracer.start_span(name, kind=trace.SpanKind.CLIENT, attributes=attrs)
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        sent = dict(params) if params else {}
        if carrier:
            meta = sent.get("_meta")
            sent["_meta"] = {**meta, **carrier} if isinstance(meta, dict) else carrier
        return span, sent, time.perf_counter()

    def client_started(self, span: trace.Span, request_id: Any) -> None:
        span.set_attribute(names.JSONRPC_REQUEST_ID, str(request_id))

    def client_end(self, span: trace.Span, started: float, error: BaseException | None, result: Any = None) -> None:
        attrs = _error_attrs(error) if error is not None else _result_attrs(result)
        self._end(span, attrs, error)
        self.client_duration.record(time.perf_counter() - started, _metric_attrs(span, attrs))

    # -- requests in: a SERVER span, parent from params._meta

    async def serve(self, request: Any, handler: Callable[[Any], Awaitable[JSON]]) -> JSON:
        """Serve ``request`` (an IncomingRequest) through ``handler`` inside its SERVER span."""
        params = request.params
        parent = _parent(params.get("_meta")) if isinstance(params, dict) else None
        name, attrs = _target(request.method, params)
        attrs[names.JSONRPC_REQUEST_ID] = str(request.id)
        ambient = trace.get_current_span().get_span_context()
        links = [trace.Link(ambient)] if ambient.is_valid and parent is not None else None
        span = self.tracer.start_span(name, context=parent, kind=trace.SpanKind.SERVER, attributes=attrs, links=links)
        token = otel_context.attach(trace.set_span_in_context(span))
        started = time.perf_counter()
        try:
            result = await handler(request)
        except BaseException as exc:
            end_attrs = _error_attrs(exc)
            otel_context.detach(token)
            self._end(span, end_attrs, exc)
            self.server_duration.record(time.perf_counter() - started, _metric_attrs(span, end_attrs))
            raise
        end_attrs = _result_attrs(result)
        otel_context.detach(token)
        self._end(span, end_attrs, None)
        self.server_duration.record(time.perf_counter() - started, _metric_attrs(span, end_attrs))
        return result

    def annotate(self, attributes: dict[str, Any]) -> None:
        """Add what the session knows (session id, protocol version, transport) to the span being served."""
        span = trace.get_current_span()
        span.set_attributes({k: v for k, v in attributes.items() if v is not None})

    # -- sessions

    def session_closed(self, role: str, seconds: float, error: BaseException | None = None) -> None:
        attrs = _error_attrs(error) if error is not None else {}
        self.session_duration[role].record(seconds, attrs)

    # -- questions

    def question(self, event: QuestionEvent) -> None:
        """A question put or answered: an event on the current span, a log record, the metrics."""
        attrs = event.attributes(capture_content=self.capture_content)
        trace.get_current_span().add_event(event.name, attrs)
        self.logger.emit(
            LogRecord(
                event_name=event.name,
                severity_number=SeverityNumber.INFO,
                severity_text="INFO",
                body=event.name,
                attributes=attrs,
            )
        )
        if event.side != "server":
            return
        if event.action is None:
            self.open_questions.add(1, {names.ELICITATION_MODE: event.mode, names.ELICITATION_ORIGIN: event.origin})
            return
        if event.seconds is not None:
            self.open_questions.add(-1, {names.ELICITATION_MODE: event.mode, names.ELICITATION_ORIGIN: event.origin})
            self.time_to_answer.record(
                event.seconds, {names.ELICITATION_MODE: event.mode, names.ELICITATION_ACTION: event.action}
            )

    def call_finished(self, method: str, questions: int, rounds: int) -> None:
        attrs = {names.MCP_METHOD_NAME: method}
        self.questions_per_call.record(questions, attrs)
        self.rounds_per_call.record(rounds, attrs)
        span = trace.get_current_span()
        span.set_attribute(names.METRIC_QUESTIONS_PER_CALL, questions)
        span.set_attribute(names.METRIC_ROUNDS_PER_CALL, rounds)

    def call_round(self, number: int) -> None:
        trace.get_current_span().set_attribute(names.CALL_ROUND, number)

    def page_fallback(self, reason: str) -> None:
        self.page_fallbacks.add(1, {names.FALLBACK_REASON: reason})
        trace.get_current_span().add_event("elicitkit.page.fallback", {names.FALLBACK_REASON: reason})

    def task_run(self, tool: str, task_id: str) -> AbstractContextManager[trace.Span]:
        """The span of one run of a task's body: a child of the request that started the run
        (``tools/call`` first, then the ``tasks/update`` that answered it, on any instance)."""
        return self.tracer.start_as_current_span(
            f"tasks/run {tool}",
            kind=trace.SpanKind.INTERNAL,
            attributes={names.GEN_AI_TOOL_NAME: tool, names.TASK_ID: task_id},
        )

    def task_waiting(self, delta: int) -> None:
        self.waiting_tasks.add(delta)

    # -- a fleet: a hop of its own between the instance that took the POST and the owner

    def relay_start(self, kind: str, body: JSON) -> tuple[trace.Span | None, JSON]:
        """The span of a message relayed to the session's owner, and the message to relay: a
        request's or notification's ``params._meta`` now names this span as the parent (it
        travels inside the JSON-RPC message, so it survives whatever wraps the message on the
        backplane). A response carries no context: it is counted, with no span of its own."""
        self.fleet_relays.add(1, {"elicitkit.relay.kind": kind})
        method = body.get("method") if isinstance(body, dict) else None
        if not isinstance(method, str):
            return None, body
        params = body.get("params")
        params = params if isinstance(params, dict) else None
        name, attrs = _target(method, params)
        span = self.tracer.start_span(
            f"relay {name}",
            context=_parent(params.get("_meta")) if params is not None else None,
            kind=trace.SpanKind.PRODUCER,
            attributes={**attrs, "elicitkit.relay.kind": kind},
        )
        if params is not None:
            carrier: dict[str, str] = {}
            propagate.inject(carrier, context=trace.set_span_in_context(span))
            meta = params.get("_meta")
            body = {**body, "params": {**params, "_meta": {**meta, **carrier} if isinstance(meta, dict) else carrier}}
        return span, body

    def relay_end(self, span: trace.Span | None, status: int | None = None) -> None:
        if span is not None:
            self._end(span, {names.ERROR_TYPE: str(status)} if status is not None and status >= 400 else {}, None)

    # -- helpers

    @staticmethod
    def _end(span: trace.Span, attrs: dict[str, Any], error: BaseException | None) -> None:
        if attrs:
            span.set_attributes(attrs)
        if names.ERROR_TYPE in attrs:
            description = error.message if isinstance(error, MCPError) else None
            span.set_status(trace.Status(trace.StatusCode.ERROR, description))
        span.end()


def _metric_attrs(span: trace.Span, end_attrs: dict[str, Any]) -> dict[str, Any]:
    """The low-cardinality attributes a duration metric carries (no ids, no URIs)."""
    attrs: dict[str, Any] = {}
    source = getattr(span, "attributes", None) or {}
    for key in (names.MCP_METHOD_NAME, names.GEN_AI_TOOL_NAME, names.GEN_AI_PROMPT_NAME, names.MCP_PROTOCOL_VERSION):
        value = source.get(key)
        if value is not None:
            attrs[key] = value
    if names.ERROR_TYPE in end_attrs:
        attrs[names.ERROR_TYPE] = end_attrs[names.ERROR_TYPE]
    return attrs
