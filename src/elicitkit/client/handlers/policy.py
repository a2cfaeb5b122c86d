"""Rules a client applies before any handler sees a question.

The spec leaves the client in charge of protecting its user: limit how often a server may
ask, refuse forms that fish for secrets (those belong in URL mode, where nothing passes
through the client), and keep a record. :class:`Policy` wraps any handler with:

- a per-server rate limit (:class:`RateLimit`: so many per minute, with a burst);
- a cap on questions pending at once;
- which servers may ask at all (``allow_servers`` / ``deny_servers``, shell-style patterns);
- a sensitive-field guard (:class:`SensitiveFieldGuard`): a form asking for a password, a
  token, an API key, a card or social-security number is refused and the server is told
  to use URL mode;
- an audit log (:class:`AuditLog`): one JSON line per question with the action taken, never
  the answers unless asked.
"""

from __future__ import annotations

import fnmatch
import inspect
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from elicitkit.client.responder import QuestionRefused
from elicitkit.elicitation.fields import SECRET_PATTERNS, name_words
from elicitkit.elicitation.requests import ElicitRequest, FormRequest, Origin, UrlRequest
from elicitkit.elicitation.results import AcceptedElicitation, ElicitationResult
from elicitkit.telemetry import hook as telemetry
from elicitkit.telemetry.events import QuestionEvent

logger = logging.getLogger("elicitkit.client.handlers.policy")

Handler = Callable[[ElicitRequest], Awaitable[ElicitationResult[Any] | dict[str, Any]]]
Clock = Callable[[], float]

# Words that mark a field as a secret, matched against its name, title and description
# (shared with the forms, which mask such fields when they are let through).
DEFAULT_SENSITIVE_PATTERNS: tuple[str, ...] = SECRET_PATTERNS


@dataclass
class SensitiveFieldGuard:
    """Finds form fields that look like secrets. ``allow`` names fields to let through anyway."""

    patterns: tuple[str, ...] = DEFAULT_SENSITIVE_PATTERNS
    allow: frozenset[str] = frozenset()
    _compiled: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._compiled = re.compile("|".join(f"(?:{p})" for p in self.patterns), re.IGNORECASE)

    def sensitive_fields(self, request: FormRequest) -> list[str]:
        found = []
        for name, prop in request.requested_schema.get("properties", {}).items():
            if name in self.allow:
                continue
            texts = [name_words(name)] + [
                str(prop.get(key, "")).lower() for key in ("title", "description") if isinstance(prop, dict)
            ]
            if any(self._compiled.search(text) for text in texts):
                found.append(name)
        return found


class RateLimit:
    """A token bucket per server: ``burst`` questions at once, refilled at ``per_minute``."""

    def __init__(self, per_minute: float, burst: int | None = None) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.per_minute = per_minute
        self.burst = burst if burst is not None else max(1, int(per_minute))
        if self.burst < 1:
            raise ValueError("burst must be at least 1")
        self._buckets: dict[str, tuple[float, float]] = {}  # server -> (tokens, at)

    def take(self, server: str, now: float) -> float:
        """0.0 when a question may go ahead (and counts it), else seconds until one may."""
        tokens, at = self._buckets.get(server, (float(self.burst), now))
        rate = self.per_minute / 60.0
        tokens = min(float(self.burst), tokens + (now - at) * rate)
        if tokens >= 1.0:
            self._buckets[server] = (tokens - 1.0, now)
            return 0.0
        self._buckets[server] = (tokens, now)
        return (1.0 - tokens) / rate


class AuditLog:
    """One JSON line per question: when, who asked, what, and the action taken.

    ``sink`` is a path (appended to), an open text file, a :class:`logging.Logger`, or any
    callable taking the entry dict. Answers are recorded only with ``include_answers=True``.
    """

    def __init__(
        self,
        sink: str | Path | IO[str] | logging.Logger | Callable[[dict[str, Any]], None],
        *,
        include_answers: bool = False,
    ) -> None:
        self.sink = sink
        self.include_answers = include_answers

    def record(self, entry: dict[str, Any]) -> None:
        sink = self.sink
        if isinstance(sink, (str, Path)):
            with open(sink, "a", encoding="utf-8") as out:
                out.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
        elif isinstance(sink, logging.Logger):
            sink.info("%s", json.dumps(entry, ensure_ascii=False, default=str))
        elif callable(sink):
            sink(entry)
        else:
            sink.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
            sink.flush()


def server_key(origin: Origin | None) -> str:
    """What identifies "a server" for limits: its name and where the client reached it."""
    if origin is None:
        return "unknown server"
    return f"{origin.name} @ {origin.location}" if origin.location else origin.name


class Policy:
    """Wrap ``handler`` with limits, a secret guard and an audit log; usable as ``elicitation_callback``."""

    def __init__(
        self,
        handler: Handler,
        *,
        rate_limit: RateLimit | None = None,
        max_pending: int | None = None,
        sensitive_fields: SensitiveFieldGuard | bool = True,
        allow_servers: Iterable[str] | None = None,
        deny_servers: Iterable[str] = (),
        audit: AuditLog | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.handler = handler
        self.rate_limit = rate_limit
        self.max_pending = max_pending
        if sensitive_fields is True:
            self.guard: SensitiveFieldGuard | None = SensitiveFieldGuard()
        else:
            self.guard = sensitive_fields or None
        self.allow_servers = list(allow_servers) if allow_servers is not None else None
        self.deny_servers = list(deny_servers)
        self.audit = audit
        self.clock = clock
        self.pending = 0

    async def aclose(self) -> None:
        """Close the wrapped handler, if it has anything to close (the browser form's server)."""
        closing = getattr(self.handler, "aclose", None)
        if closing is not None:
            await closing()

    def _server_allowed(self, origin: Origin | None) -> bool:
        name = origin.name if origin else "unknown server"
        if any(fnmatch.fnmatchcase(name, p) for p in self.deny_servers):
            return False
        return self.allow_servers is None or any(fnmatch.fnmatchcase(name, p) for p in self.allow_servers)

    def _gate(self, request: ElicitRequest) -> str | None:
        """Why the question is declined before reaching the handler, or None to go ahead."""
        if not self._server_allowed(request.origin):
            return f"{server_key(request.origin)} is not allowed to ask questions"
        if self.max_pending is not None and self.pending >= self.max_pending:
            return f"too many questions pending ({self.pending}, at most {self.max_pending})"
        if self.rate_limit is not None:
            wait = self.rate_limit.take(server_key(request.origin), self.clock())
            if wait > 0:
                return (
                    f"rate limit: {server_key(request.origin)} may ask {self.rate_limit.per_minute:g} questions"
                    f" per minute (burst {self.rate_limit.burst}); next in {wait:.0f} s"
                )
        return None

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any] | dict[str, Any]:
        started = time.time()
        if isinstance(request, FormRequest) and self.guard is not None:
            fields = self.guard.sensitive_fields(request)
            if fields:
                message = (
                    f"refused: form field(s) {', '.join(fields)} look like secrets; this client does not collect"
                    " passwords, tokens, keys or card numbers through form elicitation. Use URL mode"
                    " elicitation to send the user to a page of yours instead."
                )
                self._record(request, "refused", started, reason=message)
                raise QuestionRefused(message, {"reason": "sensitive_fields", "fields": fields, "useMode": "url"})
        reason = self._gate(request)
        if reason is not None:
            logger.warning("declined a question from %s: %s", server_key(request.origin), reason)
            self._record(request, "decline", started, reason=reason)
            return ElicitationResult.decline(reason)
        self.pending += 1
        try:
            outcome = self.handler(request)
            answer = await outcome if inspect.isawaitable(outcome) else outcome
        except BaseException as exc:
            self._record(request, "error", started, reason=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self.pending -= 1
        self._record(request, _action_of(answer), started, answer=answer)
        return answer

    def _record(
        self, request: ElicitRequest, action: str, started: float, *, reason: str | None = None, answer: Any = None
    ) -> None:
        """One :class:`QuestionEvent`, to the audit log and (when on) the OTel logs and span: one model."""
        tel = telemetry.current
        if self.audit is None and tel is None:
            return
        origin = request.origin
        content = answer.content if isinstance(answer, AcceptedElicitation) else None
        if isinstance(answer, dict):
            content = answer.get("content")
        event = QuestionEvent(
            side="client",
            mode=request.mode.value,
            started=started,
            action=action,
            seconds=time.time() - started,
            field_names=list(request.requested_schema.get("properties", {}))
            if isinstance(request, FormRequest)
            else [],
            message=request.message,
            url=request.url if isinstance(request, UrlRequest) else None,
            content=content,
            server=origin.name if origin else None,
            server_location=origin.location if origin else None,
            reason=reason,
        )
        if self.audit is not None:
            self.audit.record(event.audit_entry(include_answers=self.audit.include_answers))
        if tel is not None:
            tel.question(event)


def _action_of(answer: Any) -> str:
    if isinstance(answer, ElicitationResult):
        return answer.action.value
    if isinstance(answer, dict):
        return str(answer.get("action"))
    return "invalid"
