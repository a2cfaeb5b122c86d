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

from elicitkit.client.handlers.browser import BrowserHandler
from elicitkit.client.handlers.ci import CIHandler
from elicitkit.client.handlers.handler import ElicitationHandler
from elicitkit.client.handlers.policy import AuditLog, Policy, RateLimit, SensitiveFieldGuard
from elicitkit.client.handlers.terminal import TerminalHandler
from elicitkit.client.responder import QuestionRefused

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
