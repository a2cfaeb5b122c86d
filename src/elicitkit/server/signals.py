"""The server's question events for telemetry: what a scope kind reports when it puts a
question and when an answer comes back (docs/telemetry.md).

Called by the scope kinds (:mod:`elicitkit.server.scope`) and the page ladder only while
telemetry is on (``hook.current`` is not None); each kind passes what it alone knows: the era,
the round, where the question came from.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from elicitkit.protocol.jsonrpc import JSON
from elicitkit.telemetry.events import QuestionEvent

if TYPE_CHECKING:
    from elicitkit.telemetry.otel import OTel

__all__ = ["answered", "asked", "call_finished", "round_number"]

_ASKED_AT = "t:"  # the key, in a round's sealed app state, of when a question was first put


def _event(params: JSON, *, era: str | None, round_: int | None, key: str | None, origin: str) -> QuestionEvent:
    schema = params.get("requestedSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    message, url = params.get("message"), params.get("url")
    return QuestionEvent(
        side="server",
        mode=str(params.get("mode") or "form"),
        started=time.time(),
        era=era,
        round_no=round_,
        key=key,
        field_names=list(props) if isinstance(props, dict) else [],
        origin=origin,
        message=message if isinstance(message, str) else None,
        url=url if isinstance(url, str) else None,
    )


def asked(
    tel: OTel,
    params: JSON,
    *,
    era: str | None,
    round_: int | None,
    key: str | None,
    origin: str,
    app: dict[str, Any] | None = None,
) -> QuestionEvent:
    """A question put: the ``asked`` event. ``app``: a round's sealed state, which keeps when it
    was first put, so the answer in a later request (or instance) knows how long it took."""
    event = _event(params, era=era, round_=round_, key=key, origin=origin)
    if app is not None and key is not None:
        app.setdefault(_ASKED_AT + key, event.started)
    tel.question(event)
    return event


def answered(
    tel: OTel,
    params: JSON,
    raw: JSON | None,
    *,
    era: str | None,
    round_: int | None,
    key: str | None,
    origin: str,
    since: float | None = None,
    app: dict[str, Any] | None = None,
    action: str | None = None,
) -> None:
    """An answer in (``raw``), or none (``action`` says why: ``timeout``, ``error``, ``invalid``)."""
    event = _event(params, era=era, round_=round_, key=key, origin=origin)
    if since is None and app is not None and key is not None:
        put = app.get(_ASKED_AT + key)
        since = float(put) if isinstance(put, (int, float)) else None
    if action is None:
        action = str(raw.get("action")) if isinstance(raw, dict) else "invalid"
    event.action = action
    event.seconds = max(0.0, time.time() - since) if since is not None else None
    if isinstance(raw, dict):
        event.content = raw.get("content")
    tel.question(event)


def round_number(previous_round: int | None) -> int:
    """This round's number: 1 for a call's first request, one more per retry."""
    return (previous_round or 0) + 1


def call_finished(tel: OTel, method: str, questions: int, rounds: int) -> None:
    tel.call_finished(method, questions, rounds)
