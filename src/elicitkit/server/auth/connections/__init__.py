"""Third-party sign-in: ``await ctx.authorize("github")`` returns this principal's token there.

Declare the providers once (``server.connections = Connections([Provider(...)])``); the first
time a person's tool needs one, the server sends them (URL mode) to its own start page, which
proves the browser's user is that principal, shows which account is being connected, and runs
authorization code + PKCE with the provider. The tokens are kept sealed (AES-GCM under the
server's key ring) beside the tasks, refreshed before they expire, and revocable per principal
(:meth:`Connections.revoke`, ``elicitkit connections revoke``). docs/auth.md has the whole story.
"""

from __future__ import annotations

from elicitkit.server.auth.connections.manager import Connection, Connections
from elicitkit.server.auth.connections.providers import Provider, load_providers
from elicitkit.server.auth.connections.store import ConnectionStore, MemoryConnectionStore
from elicitkit.server.auth.tokens import ConnectionFailed

__all__ = [
    "Connection",
    "ConnectionFailed",
    "ConnectionStore",
    "Connections",
    "MemoryConnectionStore",
    "Provider",
    "load_providers",
]
