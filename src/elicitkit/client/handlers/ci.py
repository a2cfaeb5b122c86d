"""Answering without a person: CI jobs, scripts, batch runs.

:class:`CIHandler` fills a form from the defaults it was given (by field name), then from the
schema's own defaults, and accepts when that makes a valid answer. It declines, logging why,
when a required field has neither or the filled answer does not validate, and it always
declines URL mode: nobody is there to visit the page.

Nobody watches a CI run either, so a server that asks the same question again and again
(a tool that re-asks whatever it is told, say) would be answered forever. After
``max_repeats`` identical questions in a row (same asker, mode, message and schema or URL)
the next one is declined, with the reason logged; any other question resets the count.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import orjson

from elicitkit.elicitation.answers import validate_answer
from elicitkit.elicitation.errors import InvalidAnswer
from elicitkit.elicitation.requests import ElicitRequest, FormRequest
from elicitkit.elicitation.results import ElicitationResult

logger = logging.getLogger("elicitkit.client.handlers.ci")


def _asker(request: ElicitRequest) -> str:
    return request.origin.display_name if request.origin else "the server"


DEFAULT_MAX_REPEATS = 3


def _identity(request: ElicitRequest) -> bytes:
    """What makes two questions "the same" for the repeat guard."""
    asked = request.requested_schema if isinstance(request, FormRequest) else request.url
    origin = request.origin.name if request.origin else None
    return orjson.dumps([origin, request.mode.value, request.message, asked], option=orjson.OPT_SORT_KEYS)


class CIHandler:
    """Non-interactive answers from ``defaults`` (a field name -> value mapping).

    ``max_repeats`` (default 3) is how many times in a row the very same question is
    answered; the one after is declined, so a server looping on its question ends instead
    of asking forever. ``None`` turns the guard off.
    """

    def __init__(
        self,
        defaults: Mapping[str, Any] | None = None,
        *,
        log: logging.Logger | None = None,
        max_repeats: int | None = DEFAULT_MAX_REPEATS,
    ) -> None:
        if max_repeats is not None and max_repeats < 1:
            raise ValueError(f"max_repeats must be at least 1 (or None), not {max_repeats}")
        self.defaults: dict[str, Any] = dict(defaults or {})
        self.log = log or logger
        self.max_repeats = max_repeats
        self._last: bytes | None = None
        self._repeats = 0

    def reset(self) -> None:
        """Forget the last question (a new job, say): the repeat count starts again."""
        self._last, self._repeats = None, 0

    def _repeated_too_often(self, request: ElicitRequest) -> bool:
        if self.max_repeats is None:
            return False
        identity = _identity(request)
        if identity == self._last:
            self._repeats += 1
        else:
            self._last, self._repeats = identity, 1
        return self._repeats > self.max_repeats

    def fill(self, request: FormRequest) -> dict[str, Any]:
        """The answer this handler would give: given defaults for the fields the form has."""
        properties = request.requested_schema.get("properties", {})
        return {name: self.defaults[name] for name in properties if name in self.defaults}

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        if self._repeated_too_often(request):
            reason = (
                f"the same question came {self._repeats} times in a row; answered {self.max_repeats} times "
                "(max_repeats), declined now so the server does not ask forever"
            )
            self.log.warning("declined %s's question %r: %s", _asker(request), request.message, reason)
            return ElicitationResult.decline(reason)
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
