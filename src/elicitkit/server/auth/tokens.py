"""What a verified bearer token says, and the protocol any verifier implements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from elicitkit.errors import AuthError

__all__ = ["AccessToken", "ConnectionFailed", "InvalidToken", "TokenVerifier", "principal_of"]


class InvalidToken(AuthError):
    """A bearer token was refused; the message says why in words and never holds the token."""


class ConnectionFailed(AuthError):
    """``ctx.authorize(provider)`` got no token: the person declined, the provider refused or
    failed, the link was opened by another account, or nobody finished in time. Never holds a token."""


def principal_of(subject: str, client_id: str | None) -> str:
    """The one principal string: the subject, and the client it acts through when there is one.

    Two clients a person authorized separately are two principals: one cannot read what the
    other's tasks, pages or sessions hold.
    """
    return subject if not client_id or client_id == subject else f"{subject} via {client_id}"


@dataclass(frozen=True)
class AccessToken:
    """A token the verifier accepted: who, through which client, with which scopes, until when."""

    subject: str
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    expires_at: float | None = None  # seconds since the epoch
    claims: Mapping[str, Any] = field(default_factory=dict)

    @property
    def principal(self) -> str:
        return principal_of(self.subject, self.client_id)


class TokenVerifier(Protocol):
    """Checks a bearer token: its :class:`AccessToken`, or :class:`InvalidToken` saying why not."""

    async def verify(self, token: str) -> AccessToken: ...


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes a token grants: ``scope`` (RFC 9068, a space-separated string) or ``scp`` (a list)."""
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        return frozenset(raw.split())
    if isinstance(raw, list):
        return frozenset(s for s in raw if isinstance(s, str))
    return frozenset()


def client_of(claims: Mapping[str, Any]) -> str | None:
    value = claims.get("client_id", claims.get("azp"))
    return value if isinstance(value, str) and value else None
