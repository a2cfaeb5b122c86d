"""Answering without a person: CI jobs, scripts, batch runs.

:class:`CIHandler` fills a form from the defaults it was given (by field name), then from the
schema's own defaults, and accepts when that makes a valid answer. It declines, logging why,
when a required field has neither or the filled answer does not validate, and it always
declines URL mode: nobody is there to visit the page.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from elicitkit.elicitation.answers import validate_answer
from elicitkit.elicitation.errors import InvalidAnswer
from elicitkit.elicitation.requests import ElicitRequest, FormRequest
from elicitkit.elicitation.results import ElicitationResult

logger = logging.getLogger("elicitkit.client.handlers.ci")


def _asker(request: ElicitRequest) -> str:
    return request.origin.display_name if request.origin else "the server"


class CIHandler:
    """Non-interactive answers from ``defaults`` (a field name -> value mapping)."""

    def __init__(self, defaults: Mapping[str, Any] | None = None, *, log: logging.Logger | None = None) -> None:
        self.defaults: dict[str, Any] = dict(defaults or {})
        self.log = log or logger

    def fill(self, request: FormRequest) -> dict[str, Any]:
        """The answer this handler would give: given defaults for the fields the form has."""
        properties = request.requested_schema.get("properties", {})
        return {name: self.defaults[name] for name in properties if name in self.defaults}

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        if not isinstance(request, FormRequest):
            reason = "URL elicitation needs a person at a browser; declined in non-interactive mode"
            self.log.warning("%s asked to open %s: %s", _asker(request), request.url, reason)
            return ElicitationResult.decline(reason)
        schema = request.requested_schema
        content = self.fill(request)
        properties = schema.get("properties", {})
        missing = [
            name
            for name in schema.get("required", [])
            if name not in content and "default" not in properties.get(name, {})
        ]
        if missing:
            reason = f"no default for required field(s): {', '.join(missing)}"
            self.log.warning("declined %s's question %r: %s", _asker(request), request.message, reason)
            return ElicitationResult.decline(reason)
        try:
            answer = validate_answer(schema, content)
        except InvalidAnswer as exc:
            reason = f"the defaults do not fit the form: {exc.reason}"
            self.log.warning("declined %s's question %r: %s", _asker(request), request.message, reason)
            return ElicitationResult.decline(reason)
        self.log.info(
            "answered %s's question %r from defaults (fields: %s)",
            _asker(request),
            request.message,
            ", ".join(sorted(answer)) or "none",
        )
        return ElicitationResult.accept(answer)
