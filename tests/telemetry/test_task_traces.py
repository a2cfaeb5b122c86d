"""A task answered after a restart: the answer's event is timed from before the restart, the
later run is a span under the ``tasks/update`` that answered it, and the host's span, our
client span and the new server's span are one trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.trace import SpanKind
from pydantic import BaseModel

from elicitkit import Client, Context, Server
from elicitkit.server.tasks import SQLiteTaskStore
from elicitkit.telemetry import names
from elicitkit.transports.http.serve import serve_http_background

from .conftest import Captured, child_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


class Approval(BaseModel):
    approve: bool


def build(db: Path) -> Server:
    server = Server("otel-task-test", task_store=SQLiteTaskStore(db))

    @server.tool(task="required", task_poll_interval_ms=50)
    async def deploy(ctx: Context, target: str) -> str:
        outcome = await ctx.elicit(f"Deploy to {target}?", Approval, key="approve")
        return f"{target}: {outcome.action}"

    return server


async def wait_for(client: Client, task_id: str, status: str) -> dict[str, Any]:
    with anyio.fail_after(20):
        while True:
            task = await client.get_task(task_id)
            if task["status"] == status:
                return task
            await anyio.sleep(0.05)


async def test_a_task_answered_after_a_restart(otel: Captured, tmp_path: Path) -> None:
    host = otel.tracer_provider.get_tracer("host")
    db = tmp_path / "tasks.db"
    first = build(db)
    async with serve_http_background(first, port=0) as handle, Client(handle.url, mode="modern") as client:
        with host.start_as_current_span("host start"):
            started = await client.start_task("deploy", {"target": "prod"})
        task_id = started.task_id  # type: ignore[union-attr]
        waiting = await wait_for(client, task_id, "input_required")
        assert list(waiting["inputRequests"]) == ["approve"]
    await first.tasks.aclose()

    start_root = otel.one("host start")
    created = next(s for s in otel.named("tools/call deploy") if s.kind is SpanKind.SERVER)
    run_before = otel.one("tasks/run deploy")
    assert child_of(created, next(s for s in otel.named("tools/call deploy") if s.kind is SpanKind.CLIENT))
    assert created.context.trace_id == start_root.context.trace_id
    assert child_of(run_before, created)
    assert run_before.attributes is not None and run_before.attributes[names.TASK_ID] == task_id
    asked = otel.events(run_before, names.EVENT_ASKED)
    assert [(e[names.ELICITATION_KEY], e[names.ELICITATION_ORIGIN]) for e in asked] == [("approve", "task")]
    assert sum(p.value for p in otel.points(names.METRIC_WAITING_TASKS)) == 1
    otel.spans.clear()

    second = build(db)  # a new server on the same file: the process that made the task is gone
    async with serve_http_background(second, port=0) as handle, Client(handle.url, mode="modern") as client:
        with host.start_as_current_span("host answer"):
            await client.answer_task(task_id, {"approve": {"action": "accept", "content": {"approve": True}}})
        done = await wait_for(client, task_id, "completed")
        assert "prod: accept" in str(done)
    await second.tasks.aclose()

    answer_root = otel.one("host answer")
    update_client = next(s for s in otel.named("tasks/update") if s.kind is SpanKind.CLIENT)
    update_server = next(s for s in otel.named("tasks/update") if s.kind is SpanKind.SERVER)
    assert child_of(update_client, answer_root) and child_of(update_server, update_client)
    took = otel.events(update_server, names.EVENT_ANSWERED)
    assert len(took) == 1
    event = took[0]
    assert event[names.ELICITATION_KEY] == "approve" and event[names.ELICITATION_ORIGIN] == "task"
    assert event[names.ELICITATION_ACTION] == "accept" and event[names.ELICITATION_MODE] == "form"
    assert event[names.ELICITATION_ERA] == "2026-07-28" and event[names.ELICITATION_FIELDS] == 1
    assert event[names.ELICITATION_TIME_TO_ANSWER] >= 0
    run_after = otel.one("tasks/run deploy")
    assert child_of(run_after, update_server)  # the later run: in the answering call's trace
    assert otel.events(run_after, names.EVENT_ASKED) == []  # answered, not asked again
    assert sum(p.value for p in otel.points(names.METRIC_WAITING_TASKS)) == 0
    ttas = otel.points(names.METRIC_TIME_TO_ANSWER)
    assert [(p.attributes[names.ELICITATION_ACTION], p.count) for p in ttas] == [("accept", 1)]
