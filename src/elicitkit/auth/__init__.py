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
are imported inside the functions that use them. docs/auth.md has a worked example of each.
"""

from __future__ import annotations

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
