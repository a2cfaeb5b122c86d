"""Answer a server's questions on a one-time page in the user's own browser.

:class:`BrowserHandler` is an ``elicitation_callback``: for each question it opens a fresh
one-time URL on the loopback web app (:mod:`.app`, served by :mod:`.serve`, started on first
use inside the client's event loop), tells the user where it is, opens it (:mod:`.opener`),
and waits until the person sends, declines or cancels on the page, or the time runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from elicitkit.client.handlers.browser.opener import open_in_browser
from elicitkit.elicitation.page import FOLLOW_EVERY, asker_name
from elicitkit.elicitation.requests import ElicitRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.transports.http.loopback import LoopbackServer

if TYPE_CHECKING:
    from elicitkit.elicitation.webapp import Question

# The web app (starlette) is imported when a handler is made, not when this module is: ``import
# elicitkit`` exports BrowserHandler and must stay cheap for servers and CI clients.

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
    seconds without an answer the question is cancelled. After a URL question's consent its
    page waits (reloading itself) up to ``completion_timeout`` seconds for the server's
    completion notice. The server starts on the first
    question and serves all later ones; stop it with :meth:`aclose` or ``async with``.
    """

    def __init__(
        self,
        *,
        open_url: OpenUrl | None = None,
        timeout: float | None = None,
        announce: Callable[[str], object] | None = _announce_stderr,
        completion_timeout: float | None = 900.0,
    ) -> None:
        self.open_url: OpenUrl = open_url or open_in_browser
        self.timeout = timeout
        self.announce = announce
        self.completion_timeout = completion_timeout
        self._waits: set[asyncio.Task[None]] = set()
        from elicitkit.elicitation.webapp import FormApp

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
        """Cancel open questions and stop the server (a later question starts it again).

        A page still reloading itself (a done page looking out for a next question, a waiting
        page) is served once more without reloading first, so the tab stays readable after
        the client exits instead of ending on "This site can't be reached".
        """
        for task in list(self._waits):
            task.cancel()
        for question in list(self._app.questions.values()):
            self._app.finish(question, ElicitationResult.cancel())
        await self._let_pages_settle()
        self._app.listening_at("")
        await self._server.stop()

    async def _let_pages_settle(self) -> None:
        now = time.monotonic()
        reloading = [q for q in self._app.closed.values() if now - q.seen_at < FOLLOW_EVERY + 1 and q.reloads]
        if not reloading:
            return
        self._app.lingering = True  # from now on every page is served without a Refresh
        with anyio.move_on_after(FOLLOW_EVERY + 1):
            while any(q.seen_at < now for q in reloading):  # noqa: ASYNC110 (a GET from the browser, no event)
                await anyio.sleep(0.05)
        self._app.lingering = False

    async def __aenter__(self) -> BrowserHandler:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- the callback -------------------------------------------------------------------

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        """Serve ``request`` on a fresh one-time URL, open it, and wait for the person's answer.

        A question that follows one just answered on a page from the same server is picked
        up by that page (it looks out for a while): a new tab opens only if it does not.
        Ctrl-C while waiting cancels the question (the server is told) instead of the program.
        """
        base = await self.start()
        question = self._app.open(request)
        url = base + question.path
        try:
            self._tell(request, url, question.step)
            with anyio.move_on_after(self.timeout if self.timeout is not None else math.inf):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._open, url, question)  # a slow opener neither delays an answer nor the timeout
                    with _ctrl_c_cancels(lambda: self._interrupted(question)):
                        await question.done.wait()
                    tg.cancel_scope.cancel()
            if question.result is None:
                logger.info("no answer within %s s: question cancelled", self.timeout)
                return ElicitationResult.cancel()
            if isinstance(request, UrlRequest) and question.outcome == "opened":
                self._follow_completion(request, question)
                self._spawn(self._open_site(request.url, question), "elicitkit-browser-open")  # in a new tab
            return question.result
        finally:
            self._app.forget(question)  # the token dies with the question, unless its page shows how it ended

    def _interrupted(self, question: Question) -> None:
        self._app.finish(question, ElicitationResult.cancel(), "cancelled")
        if self.announce is not None:
            self.announce(f"Cancelled (Ctrl-C): {asker_name(question.request.origin)} is told you dismissed it.")

    def _follow_completion(self, request: UrlRequest, question: Question) -> None:
        """Keep the waiting page up to date: the completion notice, or the lack of one."""
        if not request.notifies_completion:
            question.wait_state = "no-notice"
            return

        async def wait() -> None:
            try:
                done = await request.wait_complete(self.completion_timeout)
            except Exception:
                question.wait_state = "gone"
                return
            question.wait_state = "completed" if done else "timeout"

        self._spawn(wait(), "elicitkit-browser-wait")

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Work that outlives the question (the accept goes back at once); :meth:`aclose` stops it."""
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._waits.add(task)
        task.add_done_callback(self._waits.discard)

    def _tell(self, request: ElicitRequest, url: str, step: int) -> None:
        asker = asker_name(request.origin)
        if isinstance(request, UrlRequest):
            line = f"{asker} asks you to open a web page; decide in your browser: {url}"
        elif step > 1:
            line = f"{asker} asks question {step}; answer it in your browser (same tab): {url}"
        else:
            line = f"{asker} asks a question; answer it in your browser: {url}"
        logger.info("%s", line)
        if self.announce is not None:
            self.announce(line)

    async def _open_site(self, url: str, question: Question) -> None:
        """The site the person agreed to; its waiting page then says whether it opened."""
        question.site_opened = await self._open(url, None, announced=False)

    async def _open(self, url: str, question: Question | None, *, announced: bool = True) -> bool:
        """Open ``url`` in a browser; False when none could (``announced``: the URL was printed already)."""
        if (
            question is not None and question.follows
        ):  # the previous page reloads every FOLLOW_EVERY s: give it time to pick this up
            with anyio.move_on_after(FOLLOW_EVERY + 1.5):
                await question.claimed.wait()
            if question.claimed.is_set():
                return True
        try:
            outcome = self.open_url(url)
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except Exception:
            self._cannot_open(url, exc_info=True, announced=announced)
            return False
        if outcome is False:
            self._cannot_open(url, announced=announced)
            return False
        return True

    def _cannot_open(self, url: str, *, exc_info: bool = False, announced: bool = True) -> None:
        # The URL was announced already: saying it again at WARNING would print it twice.
        if self.announce is not None:
            logger.info("no graphical browser opened %s; it was announced to open by hand", url, exc_info=exc_info)
            where = "the address above" if announced else url  # a site the person agreed to: never printed yet
            self.announce(f"(No browser could be opened: open {where} yourself.)")
        else:
            logger.warning("could not open a browser; open %s by hand", url, exc_info=exc_info)


@contextlib.contextmanager
def _ctrl_c_cancels(cancel: Callable[[], None]) -> Iterator[None]:
    """While waiting for the page, Ctrl-C cancels this question (the server hears "cancel"), not the program."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None or previous is signal.SIG_IGN:  # installed from C, or ignored: leave it alone
        yield
        return
    loop = asyncio.get_running_loop()

    def on_interrupt(signum: int, frame: object) -> None:
        loop.call_soon_threadsafe(cancel)

    signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
