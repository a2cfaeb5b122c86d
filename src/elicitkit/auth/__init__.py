"""Reaching OAuth-protected MCP servers: ``Client(url, auth=...)`` with one of these objects.

* :class:`OAuth`: a person signs in (authorization code + PKCE, discovery, registration, refresh).
* :class:`ClientCredentials`: a machine client with a secret or a private key.
* :class:`EnterpriseManaged`: the person's enterprise IdP token, exchanged (enterprise-managed authorization).
* :class:`WorkloadIdentity`: a workload's platform JWT (jwt-bearer).
* :class:`StaticToken`: a bearer token you already have.
* :data:`AuthProvider`: the protocol for your own (``headers`` and ``on_challenge``).

:class:`TokenStore` keeps tokens between runs (:class:`MemoryTokenStore` by default);
:class:`Authorizer` is how a person consents. Errors are :class:`~elicitkit.errors.AuthError`
subclasses (``elicitkit.auth.errors``). docs/auth.md has a worked example of each.
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
    InsufficientScope,
    IssuerMismatch,
    MetadataError,
    RefreshRefused,
    RegistrationError,
    ResourceMismatch,
    StateMismatch,
    TokenEndpointError,
)
from elicitkit.auth.grants import ClientCredentials, EnterpriseManaged, WorkloadIdentity
from elicitkit.auth.oauth import OAuth
from elicitkit.auth.tokens import TokenSet
from elicitkit.errors import AuthError

__all__ = [
    "AuthError",
    "AuthProvider",
    "AuthorizationDenied",
    "Authorizer",
    "ClientCredentials",
    "EnterpriseManaged",
    "InsufficientScope",
    "IssuerMismatch",
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
    "WorkloadIdentity",
    "client_key",
    "split_key",
    "token_key",
]
