"""Server-hosted form pages: any form question, answered on a page this server serves itself.

Why: many hosts cannot render a form (no elicitation, URL mode only, or they never answer),
and a secret (API key, password) must not pass through the client or the model at all. The
page is the same one the client's browser handler shows (:mod:`elicitkit.elicitation.webapp`
and :mod:`elicitkit.elicitation.page`, one copy): one-time unguessable token per question,
expiry, Host/Origin and CSRF checks, the server's name on it, decline and cancel, and the one
validator. It is served on a loopback listener started on first use (stdio, or HTTP on the
same machine); the answer goes straight into the waiting call, or, when the call could not
wait (a client without elicitation), into the next call with the same arguments from the same
caller (:meth:`PageHost.take`).
"""

from __future__ import annotations

import hashlib
import secrets
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from elicitkit.elicitation.errors import UrlElicitationRequired
from elicitkit.elicitation.requests import FormRequest, Origin, UrlRequest
from elicitkit.elicitation.results import ElicitationResult

if TYPE_CHECKING:
    from elicitkit.elicitation.webapp import Question
    from elicitkit.server.lowlevel import LowLevelServer as Server
    from elicitkit.server.scope import RequestScope
    from elicitkit.transports.http.loopback import LoopbackServer

__all__ = ["AnswerOnPage", "PageHost", "PageOptions", "configure_pages", "pages_of"]

DEFAULT_EXPIRY = 900.0
"""Seconds a page's token lives: long enough for a person, short enough that a leaked link dies."""


@dataclass(frozen=True)
class PageOptions:
    """How a server falls back when a client cannot take a form question as asked.

    ``fallback``: ``"page"`` (the ladder: URL-mode link to the page, else a link result, and the
    same after ``deadline`` seconds without an answer) or ``"error"`` (today's behaviour:
    :class:`ElicitationUnsupported` / :class:`ElicitationTimeout`). ``expires_in``: a page's
    lifetime. Per tool, ``ctx.elicit(..., fallback=..., deadline=...)`` overrides these.
    """

    fallback: str = "error"
    deadline: float | None = None
    expires_in: float = DEFAULT_EXPIRY
    public_url: str | None = None  # HTTP: the base URL people reach the server at (behind a proxy, 0.0.0.0)


class AnswerOnPage(UrlElicitationRequired):
    """The call ends with an ordinary result giving the model the link for the person.

    Raised (and turned into that result by :func:`elicitkit.server.asking.url_required`) when
    the client cannot be asked; calling the tool again with the same arguments, once the page
    is answered, continues with the answer.
    """

    def __init__(self, url: str, message: str) -> None:
        self.url = url
        super().__init__([UrlRequest(message, url)], message)

    def result(self) -> dict[str, Any]:
        text = (
            f"This needs an answer from the person: {self.message}\n"
            f"Ask them to open {self.url} and answer there (the answer does not pass through this chat). "
            "Then call this tool again with the same arguments to continue."
        )
        return {"content": [{"type": "text", "text": text}], "structuredContent": {"answerAt": self.url}}


class PageHost:
    """One server's pages: the shared form app on a loopback listener, and the questions by caller key."""

    def __init__(self, name: str, options: PageOptions | None = None) -> None:
        self.origin = Origin(name=name)
        self.options = options or PageOptions()
        from elicitkit.elicitation.webapp import FormApp  # starlette: only for a server that shows pages

        self.app = FormApp(prefix="/ask/")
        self._listener: LoopbackServer | None = None  # uvicorn is imported when a page is first needed
        self._lock = anyio.Lock()
        self._mounted: str | None = None
        self.by_key: dict[str, Question] = {}

    def mount(self, prefix: str, base_url: str) -> Any:
        """Serve the pages beside the MCP endpoint (an HTTP transport calls this once bound).

        ``prefix``: the path (``/mcp/ask/``); ``base_url``: ``http://host:port`` as the person
        reaches it. The app answers only to that ``Host`` (DNS rebinding), and a POST's
        ``Origin`` must be its own. Returns the ASGI app to route ``prefix`` to.
        """
        authority = base_url.split("://", 1)[1].split("/", 1)[0]
        hosts = {authority}
        if authority.startswith("127.0.0.1:"):
            hosts.add("localhost:" + authority.split(":", 1)[1])
        if self.options.public_url is not None:  # behind a proxy: its Host, and its (https) Origin
            public = _origin_of(self.options.public_url)
            hosts.add(public.split("://", 1)[1])
            self.app.origins = {public}
            base_url = public
        self.app.prefix = prefix
        self.app.allow_host = hosts.__contains__
        self._mounted = _origin_of(base_url)
        return self.app

    async def base_url(self) -> str:
        """Where the pages are: beside the HTTP endpoint, else ``http://127.0.0.1:<port>`` (started on first use)."""
        if self._mounted is not None:
            return self._mounted
        async with self._lock:
            if self._listener is None:
                from elicitkit.transports.http.loopback import LoopbackServer

                self._listener = LoopbackServer(self.app)
            if not self._listener.running:
                self.app.listening_at(await self._listener.start())
        return self.app.origin

    async def open(self, key: str, message: str, schema: dict[str, Any]) -> tuple[Question, str]:
        """The page for question ``key`` (one caller, one call, one question): reused while open."""
        base = await self.base_url()
        self._prune()
        question = self.by_key.get(key)
        if question is None or (question.result is None and question.token not in self.app.questions):
            question = self.app.open(
                FormRequest(message, schema, origin=self.origin), expires_in=self.options.expires_in
            )
            self.by_key[key] = question
        return question, base + question.path

    def _prune(self) -> None:
        """Forget pages that expired unanswered (their tokens are refused already)."""
        now = time.monotonic()
        for stale in [k for k, q in self.by_key.items() if q.result is None and now > q.expires_at]:
            self.withdraw(stale)

    def take(self, key: str) -> ElicitationResult[Any] | None:
        """The answer given on ``key``'s page, once: a second call does not get it again."""
        question = self.by_key.get(key)
        if question is None or question.result is None:
            return None
        del self.by_key[key]
        return question.result

    def withdraw(self, key: str) -> None:
        """The call ended without needing the page (declined elsewhere, or error): its token dies."""
        question = self.by_key.pop(key, None)
        if question is not None and question.result is None:
            self.app.finish(question, ElicitationResult.cancel())

    async def wait(self, question: Question, timeout: float | None) -> ElicitationResult[Any] | None:
        """The page's answer, or None after ``timeout`` seconds."""
        with anyio.move_on_after(timeout if timeout is not None else DEFAULT_EXPIRY):
            await question.done.wait()
        return question.result

    async def aclose(self) -> None:
        for question in list(self.app.questions.values()):
            self.app.finish(question, ElicitationResult.cancel())
        self.by_key.clear()
        self.app.listening_at("")
        if self._listener is not None:
            await self._listener.stop()


any_fallback = False
"""Set once any server configures a page fallback or deadline: until then asking skips the ladder."""

_HOSTS: weakref.WeakKeyDictionary[Any, PageHost] = weakref.WeakKeyDictionary()
_SESSION_IDS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def configure_pages(server: Server, **options: Any) -> PageHost:
    """Set the server-wide fallback (:class:`PageOptions` fields) and get the server's pages."""
    global any_fallback
    host = pages_of(server)
    host.options = PageOptions(**{**host.options.__dict__, **options})
    if host.options.fallback != "error" or host.options.deadline is not None:
        any_fallback = True
    return host


def pages_of(server: Server) -> PageHost:
    """The server's :class:`PageHost` (made on first use)."""
    host = _HOSTS.get(server)
    if host is None:
        info = getattr(server, "server_info", None)
        info = info if isinstance(info, dict) else {"name": getattr(server, "name", None)}
        host = _HOSTS[server] = PageHost(str(info.get("name") or "this server"))
        host.origin = Origin(name=host.origin.name, version=info.get("version"), title=info.get("title"))
    return host


def caller_key(request: RequestScope, question: str) -> str | None:
    """Who asks what, as a key: the caller (session, or 2026 principal), the call and the question.

    So the answer given for one person's call never serves another's: a different session or
    principal, tool or arguments gives a different key. None when the caller cannot be told
    apart (an anonymous 2026 request on the shared stateless HTTP session): no replay then.
    """
    principal = getattr(request, "principal", None)
    if principal is not None:
        who = "p:" + str(principal)
    elif getattr(request.session, "stateless", False):
        return None
    else:
        who = "s:" + _session_id(request.session)
    params = request.request.params
    call = repr((request.request.method, params.get("name") or params.get("uri"), params.get("arguments")))
    return hashlib.sha256(f"{who}\0{call}\0{question}".encode()).hexdigest()


def _origin_of(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}"


def _session_id(session: Any) -> str:
    known = _SESSION_IDS.get(session)
    if known is None:
        known = _SESSION_IDS[session] = secrets.token_hex(16)
    return known
