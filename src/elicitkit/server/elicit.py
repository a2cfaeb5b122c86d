"""Asking the client from inside a request, on a connection that allows server requests.

This is the legacy route (2025-06-18 / 2025-11-25): the question goes out as an
``elicitation/create`` request on the stream of the call that asks, and the answer comes back
into the same call. Everything about the question itself (schema, gate, validation, results)
lives in :mod:`elicitkit.elicitation`; this module only checks capabilities, sends, waits with
a timeout, and re-asks when the answer does not fit and the caller allowed it.
"""

from __future__ import annotations

import logging
from typing import Any

from elicitkit.elicitation.answers import parse_result
from elicitkit.elicitation.errors import ElicitationFailed, ElicitationTimeout, ElicitationUnsupported, InvalidAnswer
from elicitkit.elicitation.requests import FormRequest, UrlRequest
from elicitkit.elicitation.results import AcceptedElicitation, ElicitationResult
from elicitkit.elicitation.schema import Form
from elicitkit.protocol.errors import MCPError, RequestTimeout
from elicitkit.protocol.versions import LATEST_LEGACY
from elicitkit.server.session import RequestContext

logger = logging.getLogger("elicitkit.elicitation")

DEFAULT_TIMEOUT = 600.0
"""Seconds a question waits for its answer by default: a person is answering, give them time."""


def _require_mode(request: RequestContext, mode: str) -> str:
    session = request.session
    version = session.protocol_version or LATEST_LEGACY
    if mode not in session.elicitation_modes:
        declared = sorted(session.elicitation_modes) or "no elicitation at all"
        raise ElicitationUnsupported(f"the client cannot be asked in {mode} mode (it declared: {declared})")
    if mode == "url" and version < "2025-11-25":
        raise ElicitationUnsupported(f"URL elicitation needs protocol 2025-11-25; this client speaks {version}")
    return version


async def _send(request: RequestContext, params: dict[str, Any], timeout: float | None) -> Any:
    limit = DEFAULT_TIMEOUT if timeout is None else timeout
    try:
        return await request.send_request("elicitation/create", params, timeout=limit)
    except RequestTimeout:
        raise ElicitationTimeout(f"no answer within {limit:g}s; the question was withdrawn") from None
    except MCPError as exc:
        if exc.is_local:  # the connection went away: not the user's answer, let it through
            raise
        raise ElicitationFailed(exc) from None


async def ask_form(
    request: RequestContext,
    message: str,
    form: Form,
    *,
    timeout: float | None = None,
    max_attempts: int = 1,
) -> ElicitationResult[Any]:
    """Ask a form question; ``max_attempts`` > 1 re-asks with the reason when the answer does not fit."""
    version = _require_mode(request, "form")
    schema = form.schema_for(version)
    question = message
    for attempt in range(1, max(1, max_attempts) + 1):
        raw = await _send(request, FormRequest(question, schema).to_params(version), timeout)
        try:
            outcome = parse_result(raw, mode="form", schema=schema)
            if isinstance(outcome, AcceptedElicitation):
                content = outcome.content or {}
                return AcceptedElicitation(data=form.parse(content), content=content)
            return outcome
        except InvalidAnswer as exc:
            logger.info("answer %d/%d rejected: %s", attempt, max_attempts, exc.reason)
            if attempt >= max_attempts:
                raise
            question = f"{message}\n\n(Your previous answer was not accepted: {exc.reason}. Please try again.)"
    raise AssertionError("unreachable")  # pragma: no cover


async def ask_url(
    request: RequestContext, url_request: UrlRequest, *, timeout: float | None = None
) -> ElicitationResult[None]:
    """Ask the user to visit a URL; ``accept`` means they agreed to go, not that they finished."""
    version = _require_mode(request, "url")
    raw = await _send(request, url_request.to_params(version), timeout)
    result: ElicitationResult[None] = parse_result(raw, mode="url")
    return result
