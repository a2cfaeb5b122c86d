"""A form question's page state as plain JSON, so any instance of a fleet can serve its next step.

Why: behind a round-robin balancer a person's GET and POST land on any instance, so the state
a :class:`~elicitkit.elicitation.webapp.Question` moves through (the inputs, errors, review id,
outcome, answer) cannot stay in the memory of the instance that opened it. This module only
converts (no I/O); where the JSON is kept is :mod:`elicitkit.server.page_book`'s business.
Times are stored as wall-clock instants (instances do not share a monotonic clock).
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from elicitkit.elicitation.fields import form_fields
from elicitkit.elicitation.requests import FormRequest, Origin
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.elicitation.webapp import Question

__all__ = ["from_state", "result_from_json", "result_to_json", "to_state"]

_NO_FIELD = ""  # the key JSON gives the errors of the form as a whole (None in memory)


def result_to_json(result: ElicitationResult[Any]) -> dict[str, Any]:
    """An answer as JSON: its action and, when accepted, its content."""
    out: dict[str, Any] = {"action": result.action.value}
    if result.accepted and result.content is not None:
        out["content"] = result.content
    return out


def result_from_json(data: object) -> ElicitationResult[Any] | None:
    """The answer :func:`result_to_json` wrote; None for anything else."""
    if not isinstance(data, dict):
        return None
    action = data.get("action")
    if action == "accept":
        content = data.get("content")
        return ElicitationResult.accept(content if isinstance(content, dict) else None)
    if action == "decline":
        return ElicitationResult.decline()
    if action == "cancel":
        return ElicitationResult.cancel()
    return None


def _wall(monotonic_at: float) -> float | None:
    return None if monotonic_at == float("inf") else time.time() + (monotonic_at - time.monotonic())


def _monotonic(wall_at: object) -> float:
    return float("inf") if not isinstance(wall_at, (int, float)) else time.monotonic() + (wall_at - time.time())


def to_state(q: Question) -> dict[str, Any]:
    """``q`` (a form question) as JSON."""
    assert isinstance(q.request, FormRequest)
    origin = q.request.origin
    return {
        "message": q.request.message,
        "schema": q.request.requested_schema,
        "origin": None if origin is None else [origin.name, origin.version, origin.title, origin.location],
        "token": q.token,
        "csrf": q.csrf,
        "raw": q.raw,
        "stage": q.stage,
        "errors": {_NO_FIELD if k is None else k: v for k, v in q.errors.items()},
        "notice": q.notice,
        "content": q.content,
        "defaulted": sorted(q.defaulted),
        "review_id": q.review_id,
        "result": None if q.result is None else result_to_json(q.result),
        "outcome": q.outcome,
        "step": q.step,
        "owner": q.owner,
        "key": q.key,
        "later": q.later,
        "revealed": q.revealed,
        "expires": _wall(q.expires_at),
        "closed": _wall(q.closed_at) if q.closed_at else None,
    }


def from_state(state: dict[str, Any], prefix: str) -> Question:
    """The question :func:`to_state` wrote, served under ``prefix``; raises ValueError/KeyError/TypeError if mangled."""
    origin = state.get("origin")
    request = FormRequest(
        str(state["message"]),
        dict(state["schema"]),
        origin=None if not isinstance(origin, list) else Origin(*origin),
    )
    result = result_from_json(state.get("result"))
    errors = state.get("errors") or {}
    q = Question(
        request=request,
        token=str(state["token"]),
        csrf=str(state["csrf"]),
        done=anyio.Event(),
        fields=form_fields(request.requested_schema),
        raw={str(k): [str(v) for v in vs] for k, vs in dict(state["raw"]).items()},
        stage=state.get("stage") or "form",
        errors={None if k == _NO_FIELD else str(k): str(v) for k, v in dict(errors).items()},
        notice=state.get("notice"),
        content=state.get("content"),
        defaulted=frozenset(state.get("defaulted") or ()),
        review_id=str(state.get("review_id") or ""),
        result=result,
        outcome=state.get("outcome"),
        step=int(state.get("step") or 1),
        prefix=prefix,
        expires_at=_monotonic(state.get("expires")),
        owner=state.get("owner"),
        key=state.get("key"),
        later=bool(state.get("later")),
        revealed=bool(state.get("revealed")),
    )
    closed = state.get("closed")
    if isinstance(closed, (int, float)):
        q.closed_at = _monotonic(closed)
    if result is not None:
        q.done.set()
    return q
