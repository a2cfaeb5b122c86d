"""Answer a server's questions on a one-time page in the user's own browser.

:class:`BrowserHandler` is an ``elicitation_callback``: for each question it opens a fresh
one-time URL on the loopback web app (:mod:`.app`, served by :mod:`.serve`, started on first
use inside the client's event loop), tells the user where it is, opens it (:mod:`.opener`),
and waits until the person sends, declines or cancels on the page, or the time runs out.
"""

from __future__ import annotations

import inspect
import logging
import math
import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any

import anyio

from elicitkit.client.handlers.browser.app import FormApp
from elicitkit.client.handlers.browser.opener import open_in_browser
from elicitkit.client.handlers.browser.page import asker_name
from elicitkit.client.handlers.browser.serve import LoopbackServer
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult

__all__ = ["BrowserHandler", "OpenUrl"]

logger = logging.getLogger("elicitkit.client.handlers.browser")

OpenUrl = Callable[[str], object]
"""Shows a URL to the user; called in the event loop, may return an awaitable (awaited)."""


def _announce_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class BrowserHandler:
    """Answers questions on a one-time loopback page in the user's browser.

    ``open_url`` shows the page (default :func:`open_in_browser`); it is called in the event
    loop and may return an awaitable. ``announce`` also gets a line with the URL, so it can
    be opened by hand (default: printed to stderr; None: only logged). After ``timeout``
    seconds without an answer the question is cancelled. The server starts on the first
    question and serves all later ones; stop it with :meth:`aclose` or ``async with``.
    """

    def __init__(
        self,
        *,
        open_url: OpenUrl | None = None,
        timeout: float | None = None,
        announce: Callable[[str], object] | None = _announce_stderr,
    ) -> None:
        self.open_url: OpenUrl = open_url or open_in_browser
        self.timeout = timeout
        self.announce = announce
        self._app = FormApp()
        self._server = LoopbackServer(self._app)
        self._lock: anyio.Lock | None = None

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def url(self) -> str | None:
        """The server's base URL (``http://127.0.0.1:<port>``), or None when not running."""
        return self._app.origin or None

    async def start(self) -> str:
        """Start the loopback server if it is not running; returns its base URL."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if not self._server.running:
                self._app.listening_at(await self._server.start())
        return self._app.origin

    async def aclose(self) -> None:
        """Cancel open questions and stop the server (a later question starts it again)."""
        for question in list(self._app.questions.values()):
            self._app.finish(question, ElicitationResult.cancel())
        self._app.listening_at("")
        await self._server.stop()

    async def __aenter__(self) -> BrowserHandler:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- the callback -------------------------------------------------------------------

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        """Serve ``request`` on a fresh one-time URL, open it, and wait for the person's answer."""
        base = await self.start()
        question = self._app.open(request)
        url = base + question.path
        try:
            self._tell(request, url)
            with anyio.move_on_after(self.timeout if self.timeout is not None else math.inf):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._open, url)  # a slow opener neither delays an answer nor the timeout
                    await question.done.wait()
                    tg.cancel_scope.cancel()
            if question.result is None:
                logger.info("no answer within %s s: question cancelled", self.timeout)
                return ElicitationResult.cancel()
            return question.result
        finally:
            self._app.forget(question)  # the token dies with the question

    def _tell(self, request: ElicitRequest, url: str) -> None:
        asker = asker_name(request.origin)
        if isinstance(request, UrlRequest):
            line = f"{asker} asks you to open a web page; decide in your browser: {url}"
        else:
            line = f"{asker} asks a question; answer it in your browser: {url}"
        logger.info("%s", line)
        if self.announce is not None:
            self.announce(line)

    async def _open(self, url: str) -> None:
        try:
            outcome = self.open_url(url)
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except Exception:
            logger.warning("could not open a browser; open %s by hand", url, exc_info=True)
            return
        if outcome is False:
            logger.warning("no graphical browser to open; open %s by hand", url)
