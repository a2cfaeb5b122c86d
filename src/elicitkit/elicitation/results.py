"""The three outcomes of a question, as one generic type that pattern-matches.

``ElicitationResult[T]`` is the base; :class:`AcceptedElicitation` (with ``.data``, already
validated), :class:`DeclinedElicitation` and :class:`CancelledElicitation` are the outcomes.
``ElicitationResult.accept(...)`` / ``.decline(...)`` / ``.cancel()`` build them (a client
handler's answer), ``.to_dict()`` is the wire form, ``.action`` a ``str`` enum.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from elicitkit._frozen import frozen_builder

if TYPE_CHECKING:
    from elicitkit.elicitation.requests import FormRequest

T = TypeVar("T")


class ElicitationAction(StrEnum):
    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"


class ElicitationResult(Generic[T]):
    """Base of the three outcomes. ``match`` on the subclasses, or compare ``.action``."""

    action: ClassVar[ElicitationAction]
    __slots__ = ()

    @property
    def accepted(self) -> bool:
        return self.action is ElicitationAction.ACCEPT

    @property
    def content(self) -> dict[str, Any] | None:
        """The raw answer fields; only an accepted form has any."""
        return None

    # -- factories (what a client-side handler returns) --------------------------------

    @staticmethod
    def accept(content: dict[str, Any] | None = None, *, data: Any = None) -> AcceptedElicitation[Any]:
        """The user submitted ``content`` (a form) or consented (URL mode: no content)."""
        return AcceptedElicitation(data=data if data is not None else content, content=content)

    @staticmethod
    def decline(reason: str | None = None) -> DeclinedElicitation:
        """The user said no; ``reason`` stays local (logged, shown), it is not sent as content."""
        return DeclinedElicitation(reason)

    @staticmethod
    def cancel() -> CancelledElicitation:
        """The user dismissed the question without choosing."""
        return CancelledElicitation()

    # -- wire form ---------------------------------------------------------------------

    def to_wire(self) -> dict[str, Any]:
        """The ``ElicitResult`` exactly as the spec defines it."""
        return {"action": self.action.value}

    def to_dict(self) -> dict[str, Any]:
        """A plain dict: the wire form, plus ``validationError`` for a decline with a reason."""
        return self.to_wire()


@dataclass(frozen=True, slots=True)
class AcceptedElicitation(ElicitationResult[T]):
    """Accepted. ``data`` is the validated answer (a model instance, or the scalar asked for)."""

    action: ClassVar[ElicitationAction] = ElicitationAction.ACCEPT
    data: T
    content: dict[str, Any] | None = field(default=None)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"action": "accept"}
        if self.content is not None:
            wire["content"] = self.content
        return wire

    def to_dict(self) -> dict[str, Any]:
        return self.to_wire()


# ``accepted(data, content)``: ``AcceptedElicitation(data=data, content=content)``, made quicker
# (a server makes one for every accepted form it checks).
accepted: Callable[[Any, dict[str, Any] | None], AcceptedElicitation[Any]] = frozen_builder(AcceptedElicitation)


@dataclass(frozen=True, slots=True)
class DeclinedElicitation(ElicitationResult[Any]):
    """The user explicitly said no."""

    action: ClassVar[ElicitationAction] = ElicitationAction.DECLINE
    reason: str | None = None

    @property
    def validation_error(self) -> str | None:
        """Seed-000 name for the reason."""
        return self.reason

    def to_dict(self) -> dict[str, Any]:
        wire = self.to_wire()
        if self.reason:
            wire["validationError"] = self.reason
        return wire


@dataclass(frozen=True, slots=True)
class CancelledElicitation(ElicitationResult[Any]):
    """The user dismissed the question (closed the dialog, pressed Esc...)."""

    action: ClassVar[ElicitationAction] = ElicitationAction.CANCEL


@dataclass(frozen=True, slots=True)
class CheckedAcceptance(AcceptedElicitation[dict[str, Any]]):
    """An accepted form whose ``content`` this process already checked against the schema of
    ``question`` (defaults filled): the client's responder sends it without checking it again.

    The gateway gives it: the host's answer was validated once by the gateway's server side, and
    the same content against the same schema need not be judged twice in one process (one
    validation per side). The responder trusts it only for the very request it names.
    """

    question: FormRequest | None = field(default=None, kw_only=True)
