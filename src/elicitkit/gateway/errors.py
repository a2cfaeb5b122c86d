"""The gateway's errors (cheap to import: :mod:`elicitkit.errors` names them in the one tree)."""

from __future__ import annotations

from elicitkit.errors import AuthError, ElicitkitError
from elicitkit.protocol.errors import MCPError

__all__ = ["BackendUnavailable", "ConfigError", "SignInNeeded"]


class ConfigError(ElicitkitError, ValueError):
    """The gateway's configuration cannot be used; the message names the file and the key."""


class BackendUnavailable(MCPError):
    """A backend could not be started or reached, or its connection died mid-call (names the backend)."""


class SignInNeeded(AuthError):
    """A gateway backend with ``type = "oauth"`` has no usable token, and the gateway has no person
    to sign in for it: ``elicitkit auth login URL`` where the gateway runs."""
