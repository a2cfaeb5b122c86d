"""Reaching OAuth-protected MCP servers: ``Client(url, auth=...)`` with one of these objects.

* :class:`OAuth`: a person signs in (authorization code + PKCE, discovery, registration, refresh).
* :class:`ClientCredentials`: a machine client with a secret or a private key.
* :class:`EnterpriseManaged`: the person's enterprise IdP token, exchanged (enterprise-managed authorization).
* :class:`WorkloadIdentity`: a workload's platform JWT (jwt-bearer).
* :class:`StaticToken`: a bearer token you already have.
* :data:`AuthProvider`: the protocol for your own (``headers`` and ``on_challenge``).

For a person at a terminal: :class:`LoopbackAuthorizer` (the browser, back on a loopback
redirect) and the stores that outlive the program: :class:`KeyringTokenStore`,
:class:`FileTokenStore`, :func:`default_token_store` (keyring when usable, else the file).

:class:`TokenStore` keeps tokens between runs (:class:`MemoryTokenStore` by default);
:class:`Authorizer` is how a person consents. Errors are :class:`~elicitkit.errors.AuthError`
subclasses (``elicitkit.auth.errors``).

Importing this package is cheap on purpose (``elicitkit.errors`` imports the auth errors, so
``import elicitkit`` runs it): joserfc, cryptography, aiohttp, starlette, uvicorn and keyring
are imported inside the functions that use them, and the names above load with their modules
on first use (so ``import elicitkit`` loads only ``auth.errors``). docs/auth.md has a worked
example of each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from elicitkit._lazy import lazy_names

if TYPE_CHECKING:  # what mypy and IDEs see: every name below, bound
    from elicitkit.auth.base import (
        Authorizer,
        AuthProvider,
        MemoryTokenStore,
        StaticToken,
        TokenStore,
        client_key,
        split_key,
        token_key,
    )
    from elicitkit.auth.errors import (
        AuthorizationDenied,
        AuthorizationTimeout,
        InsufficientScope,
        IssuerMismatch,
        MetadataError,
        RefreshRefused,
        RegistrationError,
        ResourceMismatch,
        StateMismatch,
        TokenEndpointError,
        TokenStoreError,
    )
    from elicitkit.auth.grants import ClientCredentials, EnterpriseManaged, WorkloadIdentity
    from elicitkit.auth.loopback import LoopbackAuthorizer
    from elicitkit.auth.oauth import OAuth
    from elicitkit.auth.stores import FileTokenStore, KeyringTokenStore, default_token_store
    from elicitkit.auth.tokens import TokenSet
    from elicitkit.errors import AuthError

__all__ = [
    "AuthError",
    "AuthProvider",
    "AuthorizationDenied",
    "AuthorizationTimeout",
    "Authorizer",
    "ClientCredentials",
    "EnterpriseManaged",
    "FileTokenStore",
    "InsufficientScope",
    "IssuerMismatch",
    "KeyringTokenStore",
    "LoopbackAuthorizer",
    "MemoryTokenStore",
    "MetadataError",
    "OAuth",
    "RefreshRefused",
    "RegistrationError",
    "ResourceMismatch",
    "StateMismatch",
    "StaticToken",
    "TokenEndpointError",
    "TokenSet",
    "TokenStore",
    "TokenStoreError",
    "WorkloadIdentity",
    "client_key",
    "default_token_store",
    "split_key",
    "token_key",
]

# Each name loads with its module on first use: ``elicitkit.errors`` imports
# ``elicitkit.auth.errors``, which runs this file, and every ``import elicitkit`` (every test and CLI
# subprocess) would otherwise load the whole OAuth client.
_HOMES = {
    "AuthError": "elicitkit.errors",
    "AuthProvider": "elicitkit.auth.base",
    "AuthorizationDenied": "elicitkit.auth.errors",
    "AuthorizationTimeout": "elicitkit.auth.errors",
    "Authorizer": "elicitkit.auth.base",
    "ClientCredentials": "elicitkit.auth.grants",
    "EnterpriseManaged": "elicitkit.auth.grants",
    "FileTokenStore": "elicitkit.auth.stores",
    "InsufficientScope": "elicitkit.auth.errors",
    "IssuerMismatch": "elicitkit.auth.errors",
    "KeyringTokenStore": "elicitkit.auth.stores",
    "LoopbackAuthorizer": "elicitkit.auth.loopback",
    "MemoryTokenStore": "elicitkit.auth.base",
    "MetadataError": "elicitkit.auth.errors",
    "OAuth": "elicitkit.auth.oauth",
    "RefreshRefused": "elicitkit.auth.errors",
    "RegistrationError": "elicitkit.auth.errors",
    "ResourceMismatch": "elicitkit.auth.errors",
    "StateMismatch": "elicitkit.auth.errors",
    "StaticToken": "elicitkit.auth.base",
    "TokenEndpointError": "elicitkit.auth.errors",
    "TokenSet": "elicitkit.auth.tokens",
    "TokenStore": "elicitkit.auth.base",
    "TokenStoreError": "elicitkit.auth.errors",
    "WorkloadIdentity": "elicitkit.auth.grants",
    "client_key": "elicitkit.auth.base",
    "default_token_store": "elicitkit.auth.stores",
    "split_key": "elicitkit.auth.base",
    "token_key": "elicitkit.auth.base",
}

if not TYPE_CHECKING:  # hidden from mypy, so an unknown name stays a type error there
    __getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
