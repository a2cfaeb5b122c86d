"""Ready-made answers to a server's questions, each usable as ``elicitation_callback``.

A handler is any async callable ``(ElicitRequest) -> ElicitationResult``; the client validates
what it returns against the question before sending. Handlers here:

- :class:`CIHandler`: non-interactive; fills forms from given defaults and the schema's own.
- :class:`ElicitationHandler`: the seed-000 surface (``ci_mode``, ``ci_defaults``,
  ``set_custom_handler``, ``elicit``).
- :class:`TerminalHandler`: a form in the terminal, with review before an explicit send.
- :class:`BrowserHandler`: a form on a one-time loopback page in the browser (redirect after
  every post, a phone layout, one tab for a run of questions).
- :class:`Policy`: wraps any handler with rate limits, a pending cap, a sensitive-field guard
  and an audit log.
"""

from typing import TYPE_CHECKING, Any

from elicitkit.client.handlers.ci import CIHandler
from elicitkit.client.handlers.handler import ElicitationHandler
from elicitkit.client.handlers.policy import AuditLog, Policy, RateLimit, SensitiveFieldGuard
from elicitkit.client.responder import QuestionRefused

if TYPE_CHECKING:
    from elicitkit.client.handlers.browser import BrowserHandler
    from elicitkit.client.handlers.terminal import TerminalHandler

__all__ = [
    "AuditLog",
    "BrowserHandler",
    "CIHandler",
    "ElicitationHandler",
    "Policy",
    "QuestionRefused",
    "RateLimit",
    "SensitiveFieldGuard",
    "TerminalHandler",
]


def __getattr__(name: str) -> Any:
    # The interactive handlers pull in prompt_toolkit / rich / a web server: import on first use.
    if name == "TerminalHandler":
        from elicitkit.client.handlers.terminal import TerminalHandler

        return TerminalHandler
    if name == "BrowserHandler":
        from elicitkit.client.handlers.browser import BrowserHandler

        return BrowserHandler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
