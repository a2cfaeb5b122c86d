"""What can go wrong when asking a person, each as its own type so callers can catch precisely."""

from __future__ import annotations

from typing import Any

from elicitkit.protocol.errors import INVALID_PARAMS, URL_ELICITATION_REQUIRED, MCPError


class ElicitationError(Exception):
    """Base class of every elicitation failure."""


class SchemaError(ElicitationError, TypeError):
    """A requested schema outside what the spec allows; raised before anything is sent.

    ``problems`` lists ``(field, reason)`` pairs; ``field`` is ``None`` for the schema as a whole.
    """

    def __init__(self, problems: list[tuple[str | None, str]]) -> None:
        self.problems = problems
        lines = [f"field {name!r}: {reason}" if name else reason for name, reason in problems]
        super().__init__("invalid elicitation schema: " + "; ".join(lines))

    def to_mcp_error(self) -> MCPError:
        return MCPError(INVALID_PARAMS, str(self), {"problems": [{"field": f, "reason": r} for f, r in self.problems]})


class InvalidAnswer(ElicitationError, ValueError):
    """An answer that does not fit the question: wrong type, missing field, bad action..."""

    def __init__(self, problems: list[tuple[str | None, str]], answer: Any = None) -> None:
        self.problems = problems
        self.answer = answer
        lines = [f"{name}: {reason}" if name else reason for name, reason in problems]
        super().__init__("invalid answer: " + "; ".join(lines))

    @property
    def reason(self) -> str:
        return "; ".join(f"{name}: {reason}" if name else reason for name, reason in self.problems)


class ElicitationUnsupported(ElicitationError):
    """The client cannot be asked this way (no ``elicitation`` capability, or not this mode/era)."""


class ElicitationFailed(ElicitationError):
    """The client answered the question with an error instead of a result (``.error``)."""

    def __init__(self, error: MCPError) -> None:
        self.error = error
        super().__init__(f"the client could not answer: {error.message} ({error.code})")


class ElicitationTimeout(ElicitationError, TimeoutError):
    """Nobody answered within the elicitation's timeout; the question was withdrawn."""


class UrlElicitationRequired(ElicitationError):
    """Raise from a tool: the client must complete these URL elicitations, then retry (-32042).

    >>> raise UrlElicitationRequired([UrlRequest("Authorize GitHub", "https://...", "gh-1")])
    """

    def __init__(self, elicitations: list[Any], message: str | None = None) -> None:
        if not elicitations:
            raise ValueError("UrlElicitationRequired needs at least one URL elicitation")
        self.elicitations = elicitations
        self.message = message or "This request requires the user to complete an out-of-band step first."
        super().__init__(self.message)

    def to_mcp_error(self) -> MCPError:
        items = [e.to_params() if hasattr(e, "to_params") else dict(e) for e in self.elicitations]
        return MCPError(URL_ELICITATION_REQUIRED, self.message, {"elicitations": items})
