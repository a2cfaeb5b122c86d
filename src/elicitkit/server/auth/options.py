"""A :class:`~.gate.ResourceServer` from plain options: what ``elicitkit serve --auth-*`` builds.

The introspection client's secret comes from ``$ELICITKIT_INTROSPECTION_SECRET``, never from
the command line (where ``ps`` and shell history would show it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from elicitkit.server.auth.gate import ResourceServer
from elicitkit.server.auth.introspection import IntrospectionVerifier
from elicitkit.server.auth.jwt import JWTVerifier
from elicitkit.server.auth.tokens import TokenVerifier

__all__ = ["SECRET_ENV", "resource_server_from_options"]

SECRET_ENV = "ELICITKIT_INTROSPECTION_SECRET"


def resource_server_from_options(
    *,
    issuer: str,
    resource: str,
    scopes: Sequence[str] = (),
    jwks_uri: str | None = None,
    introspection: str | None = None,
    client_id: str | None = None,
) -> ResourceServer:
    """JWT access tokens from ``issuer`` (keys from ``jwks_uri`` or its metadata), or, with
    ``introspection``, opaque tokens asked about as ``client_id``; ``ValueError`` says what is missing."""
    verifier: TokenVerifier
    if introspection is not None:
        secret = os.environ.get(SECRET_ENV)
        if not client_id or not secret:
            raise ValueError(f"introspection needs a client id (--auth-client-id) and ${SECRET_ENV}")
        verifier = IntrospectionVerifier(
            introspection, client_id=client_id, client_secret=secret, audience=resource, issuer=issuer
        )
    else:
        verifier = JWTVerifier(issuer, resource, jwks_uri=jwks_uri)
    return ResourceServer(verifier, resource=resource, authorization_servers=[issuer], scopes=scopes)
