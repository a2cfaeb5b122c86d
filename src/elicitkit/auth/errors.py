"""The OAuth client's errors: each says what was wrong and what to do, and never holds a secret.

All are :class:`~elicitkit.errors.AuthError` (under ``ElicitkitError``); messages name URLs,
issuers, status codes and OAuth error codes, never a token, code, secret, assertion or key.
"""

from __future__ import annotations

from elicitkit.errors import AuthError

__all__ = [
    "AuthorizationDenied",
    "AuthorizationTimeout",
    "InsufficientScope",
    "IssuerMismatch",
    "MetadataError",
    "RefreshRefused",
    "RegistrationError",
    "ResourceMismatch",
    "StateMismatch",
    "TokenEndpointError",
    "TokenStoreError",
]


class MetadataError(AuthError):
    """Protected-resource or authorization-server metadata that is missing, not JSON, or incomplete."""


class IssuerMismatch(AuthError):
    """An issuer that is not the one expected: in the server metadata (RFC 8414) or the redirect (RFC 9207)."""


class ResourceMismatch(AuthError):
    """The protected-resource metadata names another resource than the server being reached (RFC 9728)."""


class RegistrationError(AuthError):
    """No client identity for this authorization server: registration failed or none is possible."""


class AuthorizationDenied(AuthError):
    """The authorization server redirected back with an error (the person declined, or it refused)."""


class StateMismatch(AuthError):
    """The redirect's ``state`` is not the one sent: a forged or mixed-up redirect, refused."""


class TokenEndpointError(AuthError):
    """The token endpoint refused, hung, or answered something that is not a token response."""


class RefreshRefused(TokenEndpointError):
    """The authorization server refused to refresh the token; a new authorization is needed."""


class InsufficientScope(AuthError):
    """The server kept answering 403 insufficient_scope after the allowed re-authorizations."""


class AuthorizationTimeout(AuthError, TimeoutError):
    """Nobody completed the authorization in the browser in time (raised by ``auth.loopback``)."""


class TokenStoreError(AuthError):
    """The token store cannot be read or written; the message says which store and what to do (``auth.stores``)."""
