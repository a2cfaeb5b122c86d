"""The gateway's errors (cheap to import: :mod:`elicitkit.errors` names them in the one tree)."""

from __future__ import annotations

from elicitkit.errors import ElicitkitError
from elicitkit.protocol.errors import MCPError

__all__ = ["BackendUnavailable", "ConfigError"]


class ConfigError(ElicitkitError, ValueError):
    """The gateway's configuration cannot be used; the message names the file and the key."""


class BackendUnavailable(MCPError):
    """A backend could not be started or reached, or its connection died mid-call (names the backend)."""
