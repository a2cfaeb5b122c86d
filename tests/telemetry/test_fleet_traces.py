"""A relayed call in the Redis fleet (real redis-server and haproxy): three instances export
over OTLP/HTTP (configured from OTEL_* as ``serve --otel`` does) to a receiver this test starts;
the client's span (in-memory, here), the relaying instance's span and the owner's server span
are one trace, parent by parent. The context rides inside the relayed JSON-RPC message."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from opentelemetry.trace import SpanKind

from elicitkit import Client, ElicitationResult
from elicitkit.telemetry import names
from fleet.support import fleet

from .conftest import Captured
from .receiver import otlp_receiver

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

SERVER, PRODUCER = 2, 4  # the OTLP span kinds


async def test_a_relayed_call_is_one_trace(otel: Captured) -> None:
    async def answer(request: Any) -> ElicitationResult[Any]:
        return ElicitationResult.accept({"value": "yes"})

    host = otel.tracer_provider.get_tracer("host")
    with otlp_receiver() as (endpoint, received):
        env = {
            "FLEET_OTEL": "1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_SERVICE_NAME": "fleet",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_BLRP_SCHEDULE_DELAY": "100",
            "OTEL_METRIC_EXPORT_INTERVAL": "300",
        }
        with fleet(extra_env=env) as f, anyio.fail_after(60):
            async with Client(f.url, mode="legacy", elicitation_callback=answer) as client:
                owner = f.owner_of(client.transport.session_id).name  # type: ignore[attr-defined]
                with host.start_as_current_span("host turn"):
                    for n in range(4):  # round robin over three: most land on an instance that relays
                        assert (await client.call_tool("ask", {"tag": str(n)})).text == f"{n}=yes@{owner}"

            calls = [s for s in otel.named("tools/call ask") if s.kind is SpanKind.CLIENT]
            assert len(calls) == 4
            ids = {format(s.context.span_id, "016x") for s in calls}
            trace_id = format(otel.one("host turn").context.trace_id, "032x")
            received.wait(
                lambda r: (
                    len([s for s in r.spans if s.name == "tools/call ask" and s.kind == SERVER]) == 4
                    and any(s.name == "relay tools/call ask" for s in r.spans)
                    and names.METRIC_FLEET_RELAYS in r.metrics
                )
            )

    relays = {s.span_id: s for s in received.spans if s.name == "relay tools/call ask"}
    served = [s for s in received.spans if s.name == "tools/call ask" and s.kind == SERVER]
    assert {s.service for s in served} == {"fleet"}  # OTEL_SERVICE_NAME, read by the SDK's own configurator
    relayed = 0
    for span in served:
        assert span.trace_id == trace_id
        if span.parent_span_id in relays:  # relayed: owner <- relaying instance <- our client span
            relay = relays[span.parent_span_id]
            assert relay.kind == PRODUCER and relay.parent_span_id in ids and relay.trace_id == trace_id
            assert relay.attributes["elicitkit.relay.kind"] == "request"
            relayed += 1
        else:  # landed on the owner itself
            assert span.parent_span_id in ids
        assert [name for name, _ in span.events] == [names.EVENT_ASKED, names.EVENT_ANSWERED]
    assert relayed >= 1
    assert sum(p.as_int for p in received.metrics[names.METRIC_FLEET_RELAYS]) >= relayed
