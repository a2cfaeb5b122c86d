"""One event model (the client's audit log and the OTel log records read the same
QuestionEvent), and turning telemetry on: auto (only with a real SDK), configure_sdk and
``serve --otel`` without an SDK (a clear error), OTEL_SDK_DISABLED."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from elicitkit import CIHandler, Policy
from elicitkit.cli import main
from elicitkit.client.handlers import AuditLog
from elicitkit.compat import create_form_request
from elicitkit.errors import ElicitkitError
from elicitkit.telemetry import configure_sdk, hook, names
from elicitkit.telemetry.events import QuestionEvent

from .conftest import Captured

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

FORM = {"name": {"type": "string"}, "password": {"type": "string"}}


async def test_the_audit_log_and_the_log_records_are_one_event(otel: Captured) -> None:
    entries: list[dict[str, Any]] = []
    policy = Policy(
        CIHandler({"name": "Ada", "password": "hunter2"}, max_repeats=None),
        audit=AuditLog(entries.append, include_answers=True),
        sensitive_fields=False,
    )
    await policy(create_form_request("Sign in as whom?", FORM))
    (entry,) = entries
    (record,) = [r.log_record for r in otel.logs.get_finished_logs()]
    attributes = dict(record.attributes or {})
    assert record.event_name == names.EVENT_ANSWERED
    assert entry["action"] == attributes[names.ELICITATION_ACTION] == "accept"
    assert entry["mode"] == attributes[names.ELICITATION_MODE] == "form"
    assert len(entry["fields"]) == attributes[names.ELICITATION_FIELDS] == 2
    assert entry["seconds"] == round(attributes[names.ELICITATION_TIME_TO_ANSWER], 3)
    assert attributes[names.ELICITATION_SIDE] == "client"
    # the user's audit log keeps what it always kept; telemetry carries no text and no answer
    assert entry["message"] == "Sign in as whom?" and entry["content"] == {"name": "Ada", "password": "hunter2"}
    assert names.ELICITATION_MESSAGE not in attributes and names.ELICITATION_CONTENT not in attributes
    assert "hunter2" not in str(attributes) and "Ada" not in str(attributes)


def test_opted_in_content_never_carries_a_secret_field() -> None:
    event = QuestionEvent(
        side="server", mode="form", started=0.0, action="accept", content={"name": "Ada", "apiKey": "k-1"}
    )
    attributes = event.attributes(capture_content=True)
    assert '"name": "Ada"' in attributes[names.ELICITATION_CONTENT]
    assert "k-1" not in attributes[names.ELICITATION_CONTENT]


def test_auto_turns_on_only_with_a_real_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    assert hook.current is None
    hook.auto()  # the API's default (proxy) provider: no SDK configured
    assert hook.current is None
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: TracerProvider())
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    hook.auto()
    assert hook.current is None
    monkeypatch.delenv("OTEL_SDK_DISABLED")
    try:
        hook.auto()
        assert hook.current is not None
    finally:
        hook.uninstrument()


def test_configure_sdk_without_the_sdk_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk._configuration", None)
    with pytest.raises(ElicitkitError, match="pip install"):
        configure_sdk()
    assert hook.current is None
    result = CliRunner().invoke(main, ["serve", "nowhere:server", "--otel"])
    assert result.exit_code == 2 and "opentelemetry-sdk" in result.output


def test_otel_sdk_disabled_configures_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert configure_sdk() is False
    assert hook.current is None
