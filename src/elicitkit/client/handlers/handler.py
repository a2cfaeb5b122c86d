"""One handler object that picks how to answer: CI defaults, a custom function, or a person.

This is the shape seed 000 describes (``ElicitationHandler(ci_mode=True, ci_defaults=...)``,
``set_custom_handler``, ``await handler.elicit(request)``); the instance is also callable, so
it plugs straight into ``Client(..., elicitation_callback=handler)``.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from elicitkit.client.handlers.ci import CIHandler
from elicitkit.elicitation.requests import ElicitRequest
from elicitkit.elicitation.results import ElicitationResult

CustomHandler = Callable[[ElicitRequest], Awaitable[ElicitationResult[Any]] | ElicitationResult[Any]]


class ElicitationHandler:
    """Answer questions in CI mode, through a custom handler, or interactively.

    The order is: a custom handler if one is set; CI defaults if ``ci_mode``; otherwise the
    terminal form when stdin and stdout are terminals, and CI defaults when they are not
    (a script without a person must not hang waiting for one).
    """

    def __init__(self, ci_mode: bool = False, ci_defaults: Mapping[str, Any] | None = None) -> None:
        self.ci_mode = ci_mode
        self.ci = CIHandler(ci_defaults)
        self._custom: CustomHandler | None = None
        self._interactive: CustomHandler | None = None

    @property
    def ci_defaults(self) -> dict[str, Any]:
        return self.ci.defaults

    def set_custom_handler(self, handler: CustomHandler | None) -> None:
        """Answer every question with ``handler`` (sync or async); ``None`` to go back."""
        self._custom = handler

    def _pick(self) -> CustomHandler:
        if self._custom is not None:
            return self._custom
        if self.ci_mode or not (sys.stdin.isatty() and sys.stdout.isatty()):
            return self.ci
        if self._interactive is None:
            from elicitkit.client.handlers.terminal import TerminalHandler

            self._interactive = TerminalHandler()
        return self._interactive

    async def elicit(self, request: ElicitRequest) -> ElicitationResult[Any]:
        outcome = self._pick()(request)
        result = await outcome if inspect.isawaitable(outcome) else outcome
        return result

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        return await self.elicit(request)
