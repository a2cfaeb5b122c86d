"""The resource server: bearer tokens checked on every HTTP request (docs/auth.md, server side).

``Server(auth=ResourceServer(JWTVerifier(issuer, audience), resource=..., authorization_servers=[...]))``
puts the gate in front of the HTTP endpoint. The verified token's subject (and client) becomes
the request's principal, which the rest of the server already binds state, tasks and pages to.
Stdio stays unauthenticated, as the MCP authorization spec says.
"""

from __future__ import annotations

from elicitkit.server.auth.gate import ResourceServer
from elicitkit.server.auth.introspection import IntrospectionVerifier
from elicitkit.server.auth.jwt import JWTVerifier
from elicitkit.server.auth.tokens import AccessToken, InvalidToken, TokenVerifier

__all__ = ["AccessToken", "IntrospectionVerifier", "InvalidToken", "JWTVerifier", "ResourceServer", "TokenVerifier"]
