"""One question, as every record of it sees it: the client's audit log and the OTel logs and
span events read the same :class:`QuestionEvent`, so there is no second copy to drift.

What goes out differs by sink, never the event: the audit log keeps its JSON line (message
and URL included: it is the user's own record, answers only with ``include_answers``); the
telemetry attributes carry no message text, URL or answer unless the operator opts in
(``instrument(capture_content=True)``), and never a field the client's guard called secret.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from elicitkit.elicitation.fields import SECRET_PATTERNS, name_words
from elicitkit.telemetry import names

_SECRET = re.compile("|".join(f"(?:{p})" for p in SECRET_PATTERNS), re.IGNORECASE)

__all__ = ["QuestionEvent"]


@dataclass(slots=True)
class QuestionEvent:
    """A question put (``action`` None) or answered (``action`` set, ``seconds`` how long it took)."""

    side: str  # "server" (asked it) or "client" (answered it)
    mode: str  # "form" | "url"
    started: float  # epoch seconds the question was put (or reached the client)
    action: str | None = None
    seconds: float | None = None
    era: str | None = None
    round_no: int | None = None
    key: str | None = None
    field_names: list[str] = field(default_factory=list)
    origin: str = "call"  # "call" | "page" | "task"
    message: str | None = None
    url: str | None = None
    content: Any = None  # the accepted answer; only kept when a sink opted in
    server: str | None = None
    server_location: str | None = None
    reason: str | None = None

    @property
    def field_count(self) -> int:
        return len(self.field_names)

    def audit_entry(self, *, include_answers: bool = False) -> dict[str, Any]:
        """The audit log's JSON line (its shape since the audit log was first written)."""
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(self.started, UTC).isoformat(timespec="milliseconds"),
            "server": self.server,
            "serverLocation": self.server_location,
            "mode": self.mode,
            "message": self.message,
        }
        if self.mode == "form":
            entry["fields"] = list(self.field_names)
        elif self.url is not None:
            entry["url"] = self.url
        entry["action"] = self.action
        if self.reason is not None:
            entry["reason"] = self.reason
        entry["seconds"] = round(self.seconds if self.seconds is not None else 0.0, 3)
        if include_answers and self.action == "accept":
            entry["content"] = self.content
        return entry

    def attributes(self, *, capture_content: bool = False) -> dict[str, Any]:
        """The telemetry attributes: no message, URL or answer unless ``capture_content``."""
        attrs: dict[str, Any] = {
            names.ELICITATION_SIDE: self.side,
            names.ELICITATION_MODE: self.mode,
            names.ELICITATION_ORIGIN: self.origin,
            names.ELICITATION_FIELDS: self.field_count,
        }
        if self.action is not None:
            attrs[names.ELICITATION_ACTION] = self.action
        if self.seconds is not None:
            attrs[names.ELICITATION_TIME_TO_ANSWER] = self.seconds
        if self.era is not None:
            attrs[names.ELICITATION_ERA] = self.era
        if self.round_no is not None:
            attrs[names.ELICITATION_ROUND] = self.round_no
        if self.key is not None:
            attrs[names.ELICITATION_KEY] = self.key
        if self.server is not None:
            attrs[names.ELICITATION_SERVER] = self.server
        if self.reason is not None:
            attrs[names.ELICITATION_REASON] = self.reason
        if capture_content:
            if self.message is not None:
                attrs[names.ELICITATION_MESSAGE] = self.message
            if self.action == "accept" and self.content is not None:
                attrs[names.ELICITATION_CONTENT] = json.dumps(_without_secrets(self.content), default=str)
        return attrs

    @property
    def name(self) -> str:
        return names.EVENT_ASKED if self.action is None else names.EVENT_ANSWERED


def _without_secrets(content: Any) -> Any:
    """An answer without the fields whose names say secret (a password, a token, a key...)."""
    if not isinstance(content, dict):
        return content
    return {k: ("<redacted>" if _SECRET.search(name_words(str(k))) else v) for k, v in content.items()}
