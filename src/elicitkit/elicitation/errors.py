"""What can go wrong when asking a person, each as its own type so callers can catch precisely."""

from __future__ import annotations

import logging
from typing import Any

from elicitkit.errors import ElicitkitError
from elicitkit.protocol.errors import INVALID_PARAMS, URL_ELICITATION_REQUIRED, MCPError

logger = logging.getLogger("elicitkit.elicitation")


class ElicitationError(ElicitkitError):
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


class UrlElicitationRequired(ElicitationError, MCPError):
    """-32042: the person must complete these URL elicitations first, then the request is retried.

    One class for both sides. A tool raises it (the server answers -32042 on 2025-11-25, or asks
    the URLs within the round on 2026-07-28); a client call raises it when the server answered
    -32042, with ``.elicitations`` parsed into :class:`~elicitkit.UrlRequest` objects.

    >>> raise UrlElicitationRequired([UrlRequest("Authorize GitHub", "https://...", "gh-1")])
    """

    def __init__(self, elicitations: list[Any], message: str | None = None, data: Any = None) -> None:
        if not elicitations and data is None:
            raise ValueError("UrlElicitationRequired needs at least one URL elicitation")
        self.elicitations = elicitations
        message = message or "This request requires the user to complete an out-of-band step first."
        if data is None:
            data = {"elicitations": [e.to_params() if hasattr(e, "to_params") else dict(e) for e in elicitations]}
        MCPError.__init__(self, URL_ELICITATION_REQUIRED, message, data)

    def __str__(self) -> str:
        return self.message

    def to_mcp_error(self) -> MCPError:
        """The plain JSON-RPC error a server answers with."""
        return MCPError(URL_ELICITATION_REQUIRED, self.message, self.data)

    @classmethod
    def from_mcp_error(cls, error: MCPError, origin: Any = None) -> UrlElicitationRequired:
        """Client side: a -32042 error as received, its well-formed URL elicitations parsed."""
        from elicitkit.elicitation.requests import InvalidRequest, UrlRequest, parse_request

        data = error.data if isinstance(error.data, dict) else {}
        items = data.get("elicitations")
        requests: list[UrlRequest] = []
        for item in items if isinstance(items, list) else []:
            try:
                parsed = parse_request({"mode": "url", **item} if isinstance(item, dict) else item, origin=origin)
            except InvalidRequest as exc:
                logger.warning("ignored a malformed entry in a -32042 error: %s", exc)
                continue
            if isinstance(parsed, UrlRequest):
                requests.append(parsed)
        return cls(requests, error.message, error.data if error.data is not None else {})
