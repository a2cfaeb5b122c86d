"""The person's consent in their browser, back to us on a loopback redirect (RFC 8252).

:class:`LoopbackAuthorizer` listens on ``127.0.0.1`` at a port the system picks, shows the
authorization URL (opens the browser when one can be opened, and always prints the address, so
a person on SSH or in a container can open it elsewhere), and returns the query parameters the
authorization server redirects back with. Checking ``state`` and ``iss`` is the flow's job; this
module only carries them. The code never reaches a log: the listener's access log is off and no
message here includes a query string.
"""

from __future__ import annotations

import asyncio
import html
import logging
import os
import sys
import webbrowser
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

import anyio
import anyio.to_thread

from elicitkit.auth.errors import AuthorizationTimeout
from elicitkit.transports.http.loopback import LoopbackServer

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, Response
    from starlette.types import Receive, Scope, Send

# starlette is imported where the redirect is answered: ``elicitkit.errors`` imports the auth
# errors, which runs ``elicitkit.auth`` (this module included), and ``import elicitkit`` stays cheap.

__all__ = ["AuthorizationTimeout", "LoopbackAuthorizer", "can_open_browser"]

logger = logging.getLogger("elicitkit.auth")

CALLBACK_PATH = "/callback"
# The parameters that end an authorization: a code, or an error (RFC 6749 4.1.2 and 4.1.2.1).
_FINAL = ("code", "error")


def can_open_browser() -> bool:
    """Whether ``webbrowser`` can show a page to the person at this machine.

    ``$BROWSER`` always counts (the person said which one). Otherwise a desktop is needed: macOS and
    Windows have one; elsewhere only with ``$DISPLAY`` or ``$WAYLAND_DISPLAY``: on SSH or in a container
    a text browser would take over the terminal the command runs in, so the address is printed instead.
    """
    if os.environ.get("BROWSER"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def _page(title: str, body: str, status: int) -> HTMLResponse:
    from starlette.responses import HTMLResponse

    text = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34em;margin:4em auto;padding:0 1em}</style>"
        f"</head><body><h1>{html.escape(title)}</h1><p>{html.escape(body)}</p></body></html>"
    )
    # no-store: the page's URL carried a code; Referrer-Policy: nothing on it may leak it onwards
    headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
    return HTMLResponse(text, status_code=status, headers=headers)


class LoopbackAuthorizer:
    """Shows the authorization URL and waits for the browser to come back to ``127.0.0.1``.

    ``open_browser=False`` (``--no-browser``) only prints the address; ``print_to`` is where the
    address goes (stderr, so a command's output stays clean); ``port`` fixes the port for a client
    registered with one exact redirect URI; ``timeout`` is how long the person has, in seconds.
    """

    def __init__(
        self,
        open_browser: bool = True,
        print_to: TextIO | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        timeout: float = 300.0,
    ) -> None:
        if host != "127.0.0.1":  # RFC 8252 8.3: the IP literal, never "localhost" (it may resolve elsewhere)
            raise ValueError("the loopback redirect listens on 127.0.0.1 only (RFC 8252 section 8.3)")
        self.open_browser = open_browser
        self.print_to = print_to
        self.host = host
        self.timeout = timeout
        self._server = LoopbackServer(self._app, port=port)
        self._redirect_uri: str | None = None
        self._waiting: asyncio.Future[dict[str, str]] | None = None

    @property
    def redirect_uri(self) -> str:
        """``http://127.0.0.1:<port>/callback``; known once :meth:`start` has bound the port."""
        if self._redirect_uri is None:
            raise RuntimeError("LoopbackAuthorizer.redirect_uri is known only after `await start()`")
        return self._redirect_uri

    @redirect_uri.setter
    def redirect_uri(self, value: str) -> None:  # the Authorizer protocol declares a plain attribute
        self._redirect_uri = value

    async def start(self) -> None:
        """Bind the listener (the port is in :attr:`redirect_uri` from now on); again after close is fine."""
        if self._server.running:
            return
        address = await self._server.start()
        self._redirect_uri = f"http://{address}{CALLBACK_PATH}"

    async def close(self) -> None:
        """Stop listening; a pending :meth:`authorize` gets nothing more."""
        await self._server.stop()

    async def __aenter__(self) -> LoopbackAuthorizer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def authorize(self, authorization_url: str) -> Mapping[str, str]:
        """Show ``authorization_url``; return the redirect's query parameters (code, state, iss, error, ...)."""
        await self.start()
        waiting: asyncio.Future[dict[str, str]] = asyncio.get_running_loop().create_future()
        self._waiting = waiting
        try:
            opened = self.open_browser and can_open_browser() and await self._open(authorization_url)
            self._tell(authorization_url, opened)
            try:
                with anyio.fail_after(self.timeout):
                    return await waiting
            except TimeoutError:
                minutes = f"{self.timeout / 60:g} minute(s)"
                raise AuthorizationTimeout(
                    f"the authorization was not completed in the browser within {minutes}; run the command "
                    "again and finish signing in (or pass a longer timeout)"
                ) from None
        finally:
            self._waiting = None

    async def _open(self, url: str) -> bool:
        try:
            return await anyio.to_thread.run_sync(webbrowser.open, url)
        except Exception as exc:  # a broken $BROWSER must not stop the person: the address is printed
            logger.debug("could not open a browser: %s", type(exc).__name__)
            return False

    def _tell(self, url: str, opened: bool) -> None:
        out = self.print_to if self.print_to is not None else sys.stderr
        if opened:
            lead = "Opened your browser to sign in. If it did not open, visit this address:"
        else:
            lead = "To sign in, open this address in a browser (on any machine that can reach this one's port):"
            if os.environ.get("SSH_CONNECTION"):
                port = self.redirect_uri.rsplit(":", 1)[1].split("/", 1)[0]
                lead = (
                    "To sign in, open this address in a browser on this machine, or forward the port first "
                    f"(ssh -L {port}:127.0.0.1:{port} ...) and open it on yours:"
                )
        print(f"{lead}\n\n    {url}\n", file=out, flush=True)

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        from starlette.requests import Request

        response = self._respond(Request(scope, receive))
        await response(scope, receive, send)

    def _respond(self, request: Request) -> Response:
        from starlette.responses import PlainTextResponse

        if request.url.path != CALLBACK_PATH or request.method not in ("GET", "HEAD"):
            # /favicon.ico and whatever else a browser asks for: not an authorization, nothing to settle
            return PlainTextResponse("Not found", status_code=404, headers={"Cache-Control": "no-store"})
        pairs = request.query_params.multi_items()
        params = dict(pairs)
        if not any(key in params for key in _FINAL):
            return _page("Nothing to do here", "This address waits for a sign-in to finish.", 400)
        if len(params) != len(pairs):  # RFC 6749 3.1: a parameter appears at most once; which one is meant?
            params = {"error": "invalid_request", "error_description": "the redirect repeated a parameter"}
        waiting = self._waiting
        if waiting is None or waiting.done():
            return _page(
                "This sign-in is over",
                "The command is no longer waiting for it. Close this tab and run the command again if needed.",
                409,
            )
        waiting.set_result(params)
        if "error" in params:
            reason = params.get("error_description") or params["error"]
            return _page("Sign-in did not complete", f"{reason}. You can close this tab.", 200)
        return _page("Signed in", "You are signed in: you can close this tab and return to your terminal.", 200)
