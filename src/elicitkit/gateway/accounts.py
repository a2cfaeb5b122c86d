"""Backends each person signs in to with their own account (``auth.type = "connect"``).

The tokens are ``ctx.authorize``'s: the gateway's :class:`~elicitkit.server.auth.connections.Connections`
holds one provider per such backend (its authorization server, the backend's URL as the
resource), each person's token sealed at rest under the principal the front door verified. A
call to such a backend first makes sure its principal has a token (else the person is asked
through a URL question, in the host's era, or sent to the page), then goes through a connection
of that principal's, which sends their token.

Until someone has signed in, the gateway cannot list what the backend offers (every request
needs a person's token): it shows one tool, ``<namespace>sign_in``, in its place. Whoever calls
it signs in, the backend's lists are fetched with their token and every host is told the list
changed. The lists are then shared by everyone (as every backend's are); each call still goes
with its own principal's token, asking them to sign in first when they have none.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from elicitkit.elicitation.errors import UrlElicitationRequired
from elicitkit.errors import AuthError
from elicitkit.gateway.auth import PersonToken, provider_for, sign_in
from elicitkit.gateway.catalogue import Entry, Listing
from elicitkit.gateway.errors import ConfigError
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.server import asking

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from elicitkit.gateway.config import GatewayConfig
    from elicitkit.gateway.gateway import Gateway
    from elicitkit.server.auth.connections import Connections
    from elicitkit.server.scope import RequestScope

__all__ = ["SIGN_IN_TOOL", "Accounts", "connections_for"]

logger = logging.getLogger("elicitkit.gateway")

SIGN_IN_TOOL = "sign_in"


def connections_for(config: GatewayConfig, given: Connections | None) -> Connections | None:
    """The gateway's connections: one provider per ``connect`` backend (or the ones passed in,
    which must then name each such backend)."""
    wanted = {b.name: b for b in config.backends if b.auth is not None and b.auth.type == "connect"}
    if not wanted:
        return given
    if given is not None:
        missing = sorted(set(wanted) - set(given.providers))
        if missing:
            raise ConfigError(f"connections=...: no provider named {', '.join(map(repr, missing))} (a connect backend)")
        return given
    from elicitkit.server.auth.connections import Connections

    made = []
    for name, backend in wanted.items():
        assert backend.auth is not None and backend.url is not None
        made.append(provider_for(backend.auth, name, backend.url))
    return Connections(made)


def _error_result(text: str) -> JSON:
    return {"content": [{"type": "text", "text": text}], "isError": True}


class Accounts:
    """The gateway's ``connect`` backends: who signed in where, and the sign-in tool meanwhile."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.names = {b.name for b in gateway.config.backends if b.auth is not None and b.auth.type == "connect"}
        self.waiting = set(self.names)  # no lists yet: nobody with a token has listed them
        connections = gateway.connections
        for name in self.names:
            assert connections is not None
            gateway.backends[name].person_auth = lambda who, name=name: PersonToken(connections, who, name)

    def placeholder(self, name: str) -> Listing:
        tool: JSON = {
            "name": SIGN_IN_TOOL,
            "title": f"Sign in to {name}",
            "description": f"Sign in to {name} with your own account; its tools are listed once someone has.",
            "inputSchema": {"type": "object", "properties": {}},
        }
        return Listing(tools=[tool])

    def is_sign_in(self, entry: Entry) -> bool:
        return entry.backend in self.waiting and entry.original == SIGN_IN_TOOL

    async def has_token(self, principal: str | None, name: str) -> bool:
        connections = self.gateway.connections
        if principal is None or connections is None:
            return False
        try:
            return await connections.token(principal, name) is not None
        except AuthError as exc:
            logger.info("backend %s: %s's token cannot be used: %s", name, principal, exc)
            return False

    async def list_for(self, scope: RequestScope) -> None:
        """Backends still waiting, listed with this principal's token when they have one."""
        for name in sorted(self.waiting):
            if await self.has_token(scope.principal, name):
                await self.gateway.refresh(name, principal=scope.principal)

    def listed(self, name: str) -> None:
        self.waiting.discard(name)

    async def sign_in_tool(self, scope: RequestScope, name: str) -> JSON:
        """The placeholder tool: sign in, list the backend with the new token, tell every host."""
        failed = await self._signed_in(scope, name)
        if failed is not None:
            return failed
        await self.gateway.refresh(name, principal=scope.principal)
        if name in self.waiting:
            backend = self.gateway.backends[name]
            return _error_result(f"signed in to {name}, but it cannot be listed: {backend.last_error}")
        await self.gateway.tell_hosts("notifications/tools/list_changed")
        return {"content": [{"type": "text", "text": f"Signed in to {name}: its tools are listed now."}]}

    async def then(self, scope: RequestScope, name: str, call: Callable[[], Awaitable[JSON]], tool: bool) -> JSON:
        """``call`` once the principal has a token at ``name`` (asking them to sign in first)."""
        failed = await self._signed_in(scope, name, tool)
        return failed if failed is not None else await call()

    async def _signed_in(self, scope: RequestScope, name: str, tool: bool = True) -> JSON | None:
        try:
            await sign_in(scope, self.gateway, name)
        except UrlElicitationRequired as exc:  # the page fallback, or a host that retries later
            return asking.url_required(scope, exc)
        except AuthError as exc:  # ConnectionFailed: declined, refused, nobody came (never a token)
            from elicitkit.protocol.errors import INTERNAL_ERROR, MCPError

            if not tool:
                raise MCPError(INTERNAL_ERROR, f"backend {name!r}: {exc}") from None
            return _error_result(f"backend {name!r}: {exc}")
        return None
