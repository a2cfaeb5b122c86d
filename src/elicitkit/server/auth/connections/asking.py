"""``ctx.authorize(provider)``: the principal's token at a provider, asking through URL mode when
there is none.

The question is an ordinary URL-mode question put through the request's scope, so each era
does what it does for every URL question (:mod:`elicitkit.server.scope`): 2025-11-25 sends
``elicitation/create`` now, waits for the sign-in and sends
``notifications/elicitation/complete``; 2026-07-28 puts the URL input request in the round and
the retry waits for the sign-in (the flow id rides in the round's sealed state, so every round
of one call shows the same link). ``wait=False``: the call ends with -32042 (2025) or the
round's URL input (2026) and the person's next call finds the token. A client that cannot open
URLs gets the page fallback: a result with the link, and the same call again continues.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from elicitkit.elicitation.answers import parse_result
from elicitkit.elicitation.errors import UrlElicitationRequired
from elicitkit.elicitation.requests import UrlRequest
from elicitkit.protocol.versions import LATEST_LEGACY, supports_url_elicitation
from elicitkit.server.auth.connections.flows import DONE
from elicitkit.server.auth.connections.manager import connections_of
from elicitkit.server.auth.tokens import ConnectionFailed
from elicitkit.server.pages import AnswerOnPage

if TYPE_CHECKING:
    from elicitkit.server.context import Context

__all__ = ["DEFAULT_TIMEOUT", "authorize"]

DEFAULT_TIMEOUT = 600.0  # seconds a person gets to connect (the flow itself expires after flow_ttl)


async def authorize(
    ctx: Context, name: str, *, message: str | None = None, timeout: float | None = None, wait: bool = True
) -> str:
    """See :meth:`elicitkit.server.context.Context.authorize`."""
    server = ctx.server
    connections = connections_of(server)
    scope = ctx.request_context
    who = scope.principal or server.principal_of(scope)
    if who is None:
        raise ConnectionFailed(
            f"connecting {name!r} needs to know whose account it is: serve with auth (Server(auth=...)) or a "
            "principal hook, so each person's tokens stay theirs"
        )
    tokens = await connections.token(who, name)
    if tokens is not None:
        return tokens.access_token
    provider = connections.provider(name)
    pages = connections.pages_for(server)
    if pages is None:
        raise ConnectionFailed(
            "connecting an account needs the server's pages: serve it over HTTP (the start page and the "
            "provider's callback are served beside the endpoint)"
        )
    limit = DEFAULT_TIMEOUT if timeout is None else timeout
    key = f"connect:{name}"
    flow = await connections.start(
        who, name, await pages.link_base(), scope.sealed_nonce(key), None if wait else ctx.session_id
    )
    text = message or f"Connect your {provider.shown} account to continue."
    version = scope.protocol_version or LATEST_LEGACY
    question = UrlRequest(text, flow.link, flow.flow_id)
    if "url" not in scope.elicitation_modes or not supports_url_elicitation(version):
        raise AnswerOnPage(flow.link, text)  # the page fallback: the person's next call finds the token
    if not wait:
        raise UrlElicitationRequired([question], text)
    scope.count()
    raw = await scope.elicit(question.to_params(version), timeout=limit, key=key)
    consent = parse_result(raw, mode="url")
    if not consent.accepted:
        raise ConnectionFailed(f"{provider.shown} was not connected: the person answered {consent.action.value}")
    ended = await connections.wait(flow.flow_id, limit)
    if ended is None:
        raise ConnectionFailed(f"{provider.shown} was not connected within {limit:g}s; ask again")
    if ended.status != DONE:
        raise ConnectionFailed(f"{provider.shown} was not connected: {ended.reason}")
    await scope.url_finished(flow.flow_id)
    tokens = await connections.token(who, name)
    if tokens is None:
        raise ConnectionFailed(f"{provider.shown} was connected, but its token is gone (revoked meanwhile?)")
    return tokens.access_token
