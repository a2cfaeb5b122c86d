"""The connect pages: the start link, the confirm step, and the provider's callback.

Served beside the question pages (``<endpoint>/ask/connect/...``, :func:`mount`), so they need
no route of their own and pass the bearer gate the way browsers reach them. What each refuses:

* ``start?link=``: a link this server did not make (400), expired (410), already opened (410:
  a link works once). With ``Connections(sign_in=...)`` the browser's user signs in at the
  server's own issuer first, and anyone but the link's principal is refused (403).
* ``confirm`` (POST): shows nothing new; only from the browser that opened the link (its
  cookie), with the page's token, from this origin.
* ``callback``: ``state`` unknown, used or wrong (400), ``iss`` of another issuer (400, RFC
  9207), another browser (403), ``error=`` from the provider (403, the flow ends declined), a
  token endpoint that fails (502) or hangs (504). Nothing here logs a code or a token.
"""

from __future__ import annotations

import hashlib
import html
import logging
import secrets
import time
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from elicitkit.auth.errors import AuthorizationDenied, IssuerMismatch, StateMismatch, TokenEndpointError
from elicitkit.errors import AuthError
from elicitkit.server.auth.connections import oauth
from elicitkit.server.auth.connections.flows import (
    AUTHORIZING,
    CONFIRMING,
    IDENTIFYING,
    NEW,
    Flow,
    new_secret,
    split_state,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from elicitkit.runtime.contract import ASGIApp
    from elicitkit.server.auth.connections.manager import Connections
    from elicitkit.server.pages import PageHost

__all__ = ["PATH", "ConnectPages", "is_principal", "mount"]

logger = logging.getLogger("elicitkit.connections")

PATH = "connect/"  # under the question pages' prefix


class _Refused(Exception):
    def __init__(self, status: int, title: str, text: str) -> None:
        super().__init__(text)
        self.status, self.title, self.text = status, title, text


def is_principal(principal: str, subject: str) -> bool:
    """Whether ``subject`` (who signed in at the server's issuer) is the principal ``principal``
    (``"sub"``, or ``"sub via client"``: :func:`~elicitkit.server.auth.tokens.principal_of`)."""
    return principal == subject or principal.startswith(subject + " via ")


def _digest(cookie: str) -> str:
    return hashlib.sha256(cookie.encode()).hexdigest()


def _cookie_name(flow_id: str) -> str:
    return "elicitkit_connect_" + hashlib.sha256(flow_id.encode()).hexdigest()[:16]


class ConnectPages:
    """The ASGI app of the connect pages of one server (its connections, and its page host for
    the address people reach it at, the prefix and the Host check)."""

    def __init__(self, connections: Connections, host: PageHost, server_name: str) -> None:
        self.connections = connections
        self.host = host
        self.server_name = server_name

    @property
    def prefix(self) -> str:
        return self.host.app.prefix + PATH

    async def link_base(self) -> str:
        return await self.host.base_url() + self.prefix + "start"

    async def redirect_uri(self) -> str:
        return await self.host.base_url() + self.prefix + "callback"

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        from starlette.requests import Request

        request = Request(scope, receive)
        try:
            try:
                response = await self._route(request)
            except AuthError as exc:  # a provider's metadata unreachable or unusable: says which, no secret
                raise _Refused(502, "Provider unavailable", f"{exc}. Try again later.") from None
        except _Refused as exc:
            logger.info("connect page refused (%d): %s", exc.status, exc.text)
            response = _page(exc.status, exc.title, f"<p>{html.escape(exc.text)}</p>", "error")
        await response(scope, receive, send)

    async def _route(self, request: Request) -> Response:
        hosts = request.headers.getlist("host")
        allow = self.host.app.allow_host
        if len(hosts) != 1 or (allow is not None and not allow(hosts[0])):
            raise _Refused(403, "Refused", "This page is only served at its own address.")
        step = request.url.path[len(self.prefix) :] if request.url.path.startswith(self.prefix) else ""
        if step == "start" and request.method == "GET":
            return await self._start(request)
        if step == "confirm" and request.method == "POST":
            return await self._confirm(request)
        if step == "callback" and request.method == "GET":
            return await self._callback(request)
        raise _Refused(404, "Not found", "There is no such page.")

    # -- the steps ------------------------------------------------------------------------

    async def _start(self, request: Request) -> Response:
        connections = self.connections
        link = connections.open_link(request.query_params.get("link", ""))
        if link is None:
            raise _Refused(400, "Not a valid link", "This sign-in link is not valid: it is damaged, or not from here.")
        if link.expires_at < time.time():
            raise _Refused(410, "Link expired", "This sign-in link has expired. Ask again where you started.")
        found = await connections.load_flow(link.flow_id)
        if found is None:
            raise _Refused(410, "Link expired", "This sign-in has expired. Ask again where you started.")
        flow, sealed = found
        if (flow.principal, flow.provider) != (link.principal, link.provider):
            raise _Refused(400, "Not a valid link", "This sign-in link does not match its sign-in.")
        if flow.status != NEW:
            raise _Refused(
                410, "Link already used", "This sign-in link was already opened; a link works once. Ask again."
            )
        cookie = secrets.token_urlsafe(24)
        sign_in = connections.sign_in
        if sign_in is None:
            moved = flow.step(status=CONFIRMING, cookie=_digest(cookie), confirm=new_secret())
            if not await connections.save_flow(moved, sealed):
                raise _Refused(410, "Link already used", "This sign-in link was already opened; a link works once.")
            response = self._confirm_page(moved)
        else:
            endpoints = await connections.endpoints(sign_in)
            secret = new_secret()
            scopes = tuple(sign_in.scopes) or ("openid",)
            url, verifier = oauth.authorization_url(
                sign_in, endpoints, await self.redirect_uri(), f"{flow.flow_id}.{secret}", scopes
            )
            moved = flow.step(status=IDENTIFYING, cookie=_digest(cookie), who_secret=secret, who_verifier=verifier)
            if not await connections.save_flow(moved, sealed):
                raise _Refused(410, "Link already used", "This sign-in link was already opened; a link works once.")
            response = _redirect(url)
        response.set_cookie(
            _cookie_name(flow.flow_id),
            cookie,
            max_age=int(connections.flow_ttl),
            path=self.prefix,
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )
        return response

    def _confirm_page(self, flow: Flow) -> Response:
        provider = self.connections.provider(flow.provider)
        who = flow.account or flow.principal
        body = (
            f'<h1 id="confirm">Connect your {_e(provider.shown)} account</h1>'
            f"<p><strong>{_e(self.server_name)}</strong> asks to use your {_e(provider.shown)} account "
            f'for <strong class="account">{_e(who)}</strong>.</p>'
            f"<p>Next, {_e(provider.shown)} asks you to sign in and to allow it"
            + (f" ({_e(' '.join(provider.scopes))})" if provider.scopes else "")
            + ". If this is not you, or you did not ask for this, cancel.</p>"
            f'<form method="post" action="{_e(self.prefix)}confirm">'
            f'<input type="hidden" name="flow" value="{_e(flow.flow_id)}">'
            f'<input type="hidden" name="token" value="{_e(flow.confirm)}">'
            '<button type="submit" name="action" value="connect" id="connect">Connect</button> '
            '<button type="submit" name="action" value="cancel" id="cancel">Cancel</button></form>'
        )
        return _page(200, f"Connect {provider.shown}", body, "connect-confirm")

    async def _owned(self, request: Request, flow_id: str) -> tuple[Flow, bytes]:
        """The flow, if this browser is the one that opened its link."""
        found = await self.connections.load_flow(flow_id)
        if found is None:
            raise _Refused(400, "Unknown sign-in", "This sign-in is unknown or has expired. Ask again.")
        cookie = request.cookies.get(_cookie_name(flow_id), "")
        if not cookie or not secrets.compare_digest(_digest(cookie), found[0].cookie):
            raise _Refused(403, "Another browser", "This sign-in was started in another browser; refused here.")
        return found

    async def _confirm(self, request: Request) -> Response:
        origin = request.headers.get("origin")  # "null" after a cross-site redirect (the sign-in at the issuer)
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin not in (None, "null", own):
            raise _Refused(403, "Refused", "This form is only accepted from its own page.")
        form = await request.form()
        flow_id, token, action = (str(form.get(k, "")) for k in ("flow", "token", "action"))
        flow, sealed = await self._owned(request, flow_id)
        if flow.status != CONFIRMING:
            raise _Refused(410, "Already done", "This step was already taken. Ask again where you started.")
        if not secrets.compare_digest(token.encode(), flow.confirm.encode()):
            raise _Refused(403, "Refused", "This form does not belong to this sign-in.")
        provider = self.connections.provider(flow.provider)
        if action != "connect":
            await self.connections.fail(flow, sealed, "the person cancelled on the confirm page")
            body = f"<p>Nothing was connected to {_e(provider.shown)}. You can close this tab.</p>"
            return _page(200, "Not connected", '<h1 id="cancelled">Not connected</h1>' + body, "connect-cancelled")
        endpoints = await self.connections.endpoints(provider)
        secret = new_secret()
        url, verifier = oauth.authorization_url(
            provider, endpoints, await self.redirect_uri(), f"{flow.flow_id}.{secret}"
        )
        moved = flow.step(status=AUTHORIZING, secret=secret, verifier=verifier, confirm="")
        if not await self.connections.save_flow(moved, sealed):
            raise _Refused(410, "Already done", "This step was already taken. Ask again where you started.")
        return _redirect(url)

    async def _callback(self, request: Request) -> Response:
        query = {k: v for k, v in request.query_params.items()}
        parsed = split_state(query.get("state", ""))
        if parsed is None:
            raise _Refused(400, "Not a sign-in", "This callback carries no sign-in state; refused.")
        flow, sealed = await self._owned(request, parsed[0])
        connections = self.connections
        if flow.status == IDENTIFYING and connections.sign_in is not None:
            who, secret, verifier = connections.sign_in, flow.who_secret, flow.who_verifier
        elif flow.status == AUTHORIZING:
            who, secret, verifier = connections.provider(flow.provider), flow.secret, flow.verifier
        else:
            raise _Refused(400, "Not expected", "This sign-in is not waiting for a callback (already done?); refused.")
        endpoints = await connections.endpoints(who)
        try:
            code = oauth.check_callback(endpoints, who, query, secret)
        except (IssuerMismatch, StateMismatch) as exc:  # not this flow's answer: it is left as it was
            raise _Refused(400, "Refused", str(exc)) from None
        except AuthorizationDenied as exc:
            await connections.fail(flow, sealed, str(exc))
            raise _Refused(403, "Not connected", f"{exc}. Nothing was connected; you can close this tab.") from None
        try:
            tokens = await oauth.exchange(who, endpoints, code, await self.redirect_uri(), verifier)
        except TokenEndpointError as exc:
            await connections.fail(flow, sealed, str(exc))
            status = 504 if "did not answer" in str(exc) else 502
            raise _Refused(status, "Not connected", f"{exc}. Nothing was connected.") from None
        if flow.status == IDENTIFYING:
            return await self._identified(flow, sealed, who, endpoints, tokens)
        if not await connections.finish(flow, sealed, tokens):
            raise _Refused(410, "Already done", "This sign-in was already finished.")
        provider = connections.provider(flow.provider)
        body = (
            f'<h1 id="connected">Connected to {_e(provider.shown)}</h1>'
            f"<p>{_e(self.server_name)} can now use your {_e(provider.shown)} account. You can close this tab.</p>"
        )
        return _page(200, "Connected", body, "connect-done")

    async def _identified(self, flow: Flow, sealed: bytes, who: Any, endpoints: Any, tokens: Any) -> Response:
        try:
            subject = await oauth.userinfo_subject(who, endpoints, tokens)
        except AuthError as exc:
            await self.connections.fail(flow, sealed, str(exc))
            raise _Refused(502, "Not connected", str(exc)) from None
        if not is_principal(flow.principal, subject):
            await self.connections.fail(flow, sealed, "the sign-in link was opened by another account")
            raise _Refused(
                403,
                "Another account",
                f"You are signed in as {subject}, but this link was made for another account; refused. "
                "Nothing was connected.",
            )
        moved = flow.step(status=CONFIRMING, account=subject, confirm=new_secret(), who_verifier="")
        if not await self.connections.save_flow(moved, sealed):
            raise _Refused(410, "Already done", "This step was already taken.")
        return self._confirm_page(moved)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _page(status: int, title: str, body: str, page: str) -> Response:
    from starlette.responses import HTMLResponse

    from elicitkit.elicitation.page import plain_page

    if page == "error":
        body = f'<h1 id="error" data-status="{status}">{_e(title)}</h1>' + body
    headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
    return HTMLResponse(plain_page(title, page, body), status_code=status, headers=headers)


def _redirect(url: str) -> Response:
    from starlette.responses import RedirectResponse

    headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
    return RedirectResponse(url, status_code=303, headers=headers)


def mount(pages_app: ASGIApp, connect: ConnectPages) -> ASGIApp:
    """The question pages with the connect pages under ``<prefix>connect/``."""

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(connect.prefix):
            await connect(scope, receive, send)
        else:
            await pages_app(scope, receive, send)

    return app
