"""Reaching OAuth-protected MCP servers: the auth objects, the person's browser, the token stores."""

from __future__ import annotations

from elicitkit.auth.loopback import AuthorizationTimeout, LoopbackAuthorizer
from elicitkit.auth.stores import FileTokenStore, KeyringTokenStore, TokenStoreError, default_token_store

__all__ = [
    "AuthorizationTimeout",
    "FileTokenStore",
    "KeyringTokenStore",
    "LoopbackAuthorizer",
    "TokenStoreError",
    "default_token_store",
]
