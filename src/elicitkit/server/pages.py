"""Server-hosted form pages: any form question, answered on a page this server serves itself.

Why: many hosts cannot render a form (no elicitation, URL mode only, or they never answer),
and a secret (API key, password) must not pass through the client or the model at all. The
page is the same one the client's browser handler shows (:mod:`elicitkit.elicitation.webapp`
and :mod:`elicitkit.elicitation.page`, one copy): one-time unguessable token per question,
expiry, Host/Origin and CSRF checks, the server's name on it, decline and cancel, and the one
validator. It is served beside the MCP endpoint over HTTP (:func:`serve_http` and the
mountable :func:`create_app` alike), else on a loopback listener started on first use (stdio);
the answer goes straight into the waiting call, or, when the call could not wait (a client
without elicitation), into the next call with the same arguments from the same caller
(:meth:`PageHost.take`).

Who "the same caller" is (:func:`caller_of`): the session; on stateless 2026 HTTP the
authenticated principal; and for an anonymous stateless caller, whom nothing else tells apart,
a *claim*: an unguessable value the link result hands to that caller only, to pass back as
the ``_answerClaim`` argument. The answer is filed under the claim, so a caller without it (any
other anonymous caller making the same call) gets a page of its own, never this answer; the
claim carries the server's MAC, so a caller cannot pick a weak one of its own.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from elicitkit.elicitation.errors import ElicitationUnsupported, UrlElicitationRequired
from elicitkit.elicitation.requests import FormRequest, Origin, UrlRequest
from elicitkit.elicitation.results import ElicitationResult

if TYPE_CHECKING:
    from elicitkit.elicitation.webapp import FormApp, Question
    from elicitkit.server.lowlevel import LowLevelServer as Server
    from elicitkit.server.page_book import FleetPages
    from elicitkit.server.scope import RequestScope
    from elicitkit.transports.http.loopback import LoopbackServer

__all__ = ["CLAIM_ARGUMENT", "AnswerOnPage", "PageHost", "PageOptions", "caller_of", "configure_pages", "pages_of"]

DEFAULT_EXPIRY = 900.0
"""Seconds a page's token lives: long enough for a person, short enough that a leaked link dies."""

CLAIM_ARGUMENT = "_answerClaim"
"""The argument an anonymous stateless caller passes back to collect its page's answer.

Tools ignore arguments they do not declare, so it never reaches the tool body; it is left out
of the call's identity (the "same arguments")."""


@dataclass(frozen=True)
class PageOptions:
    """How a server falls back when a client cannot take a form question as asked.

    ``fallback``: ``"page"`` (the ladder: URL-mode link to the page, else a link result, and the
    same after ``deadline`` seconds without an answer: on 2025 eras the form is withdrawn then;
    on 2026, where nothing is pending to withdraw, a retry past the deadline without the answer
    gets the link) or ``"error"`` (today's behaviour: :class:`ElicitationUnsupported` /
    :class:`ElicitationTimeout`). ``expires_in``: a page's lifetime. ``public_url``: where people
    reach the HTTP server (behind a proxy, on a public address, or mounted with ``create_app``
    under a name it cannot vouch for); the links then use its origin. ``max_pages``: how many
    pages may be open at once (anyone who can call a tool can make the server open one; past
    it, asking on a page fails with a clear error, as sessions have ``max_sessions``). Per tool,
    ``ctx.elicit(..., fallback=..., deadline=...)`` overrides these.
    """

    fallback: str = "error"
    deadline: float | None = None
    expires_in: float = DEFAULT_EXPIRY
    public_url: str | None = None
    max_pages: int = 1000


class AnswerOnPage(UrlElicitationRequired):
    """The call ends with an ordinary result giving the model the link for the person.

    Raised (and turned into that result by :func:`elicitkit.server.asking.url_required`) when
    the client cannot be asked; calling the tool again with the same arguments, once the page
    is answered, continues with the answer.
    """

    def __init__(self, url: str, message: str, claim: str | None = None) -> None:
        self.url = url
        self.claim = claim  # an anonymous caller's claim on the answer, to pass back (CLAIM_ARGUMENT)
        super().__init__([UrlRequest(message, url)], message)

    def result(self) -> dict[str, Any]:
        again = "Then call this tool again with the same arguments to continue."
        structured: dict[str, Any] = {"answerAt": self.url}
        if self.claim is not None:
            again = (
                f'Then call this tool again with the same arguments plus "{CLAIM_ARGUMENT}": "{self.claim}" '
                "to continue (that value is what entitles this call to the answer; keep it to this conversation)."
            )
            structured["addArguments"] = {CLAIM_ARGUMENT: self.claim}
        text = (
            f"This needs an answer from the person: {self.message}\n"
            f"Ask them to open {self.url} and answer there (the answer does not pass through this chat). {again}"
        )
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured}


class PageHost:
    """One server's pages: the shared form app on a loopback listener, and the questions by caller key.

    In one process the questions live here; with a shared backplane (a fleet) they live on it
    (:class:`~elicitkit.server.page_book.FleetPages`), so any instance serves any page and the
    answer is taken once, by whichever instance runs the call.
    """

    def __init__(self, name: str, options: PageOptions | None = None, server: Any = None) -> None:
        self.origin = Origin(name=name)
        self.options = options or PageOptions()
        from elicitkit.elicitation.webapp import FormApp  # starlette: only for a server that shows pages

        self.app = FormApp(prefix="/ask/", server=True)
        self._server = weakref.ref(server) if server is not None else None
        self._listener: LoopbackServer | None = None  # uvicorn is imported when a page is first needed
        self._lock = anyio.Lock()
        self._mounted: str | None = None
        self._in_app = False  # mounted in an HTTP app that could not say where people reach it
        self._secret = secrets.token_bytes(32)  # signs the claims handed to anonymous callers
        self.by_key: dict[str, Question] = {}
        self._chain: dict[str, str] = {}  # question key -> the caller's call it belongs to
        # answers a call took, by key: (chain, the call, the answer, its page, when), back only to that call
        self._spent: dict[str, tuple[str, object, ElicitationResult[Any], Question | str, float]] = {}
        self._opened: dict[str, float] = {}  # tokens of pages opened here -> when they expire (the cap)
        self._book: FleetPages | None = None

    def _fleet(self) -> FleetPages | None:
        """The fleet's page storage, when the server has a shared backplane; None in one process."""
        server = self._server() if self._server is not None else None
        backplane = server.backplane if server is not None else None
        if backplane is None or not backplane.shared:
            return None
        if self._book is None or self._book.backplane is not backplane:
            from elicitkit.server.page_book import FleetPages

            self._book = FleetPages(backplane, self.app, self.options.expires_in * 2)
            self.app.store = self._book
            shared = backplane.shared_secret("elicitkit/pages/claims")
            if shared is not None:
                self._secret = shared  # a claim issued by one instance is honoured by all
        return self._book

    def mount(self, prefix: str, base_url: str | None, allow_host: Callable[[str], bool] | None = None) -> FormApp:
        """Serve the pages beside the MCP endpoint (an HTTP transport calls this once bound).

        ``prefix``: the path (``/mcp/ask/``) as the person's browser sees it; ``base_url``:
        ``http://host:port`` as the person reaches it, or None when the transport cannot tell
        (an app mounted in another: then only ``public_url`` makes links). The app answers only
        to that ``Host`` and those ``allow_host`` accepts (DNS rebinding), and a POST's
        ``Origin`` must be its own. Returns the ASGI app to route ``prefix`` to.
        """
        hosts: set[str] = set()
        if base_url is not None:
            authority = base_url.split("://", 1)[1].split("/", 1)[0]
            hosts.add(authority)
            if authority.startswith("127.0.0.1:"):
                hosts.add("localhost:" + authority.split(":", 1)[1])
        extra = allow_host

        def allows(host: str) -> bool:
            public = self._public()
            return (
                host in hosts
                or (public is not None and host == public.split("://", 1)[1])
                or (extra is not None and extra(host))
            )

        self.app.prefix = prefix
        self.app.allow_host = allows
        self._mounted = _origin_of(base_url) if base_url is not None else None
        self._in_app = base_url is None
        self._fleet()  # a fleet's instance serves pages other instances opened, from the first request
        return self.app

    def _public(self) -> str | None:
        """``public_url``'s origin, if set (read each time: it may be configured after mounting)."""
        return _origin_of(self.options.public_url) if self.options.public_url is not None else None

    async def base_url(self) -> str:
        """Where the pages are: ``public_url``, or beside the HTTP endpoint, else
        ``http://127.0.0.1:<port>`` (started on first use)."""
        public = self._public()
        if public is not None and (self._mounted is not None or self._in_app):
            self.app.origins = {public}  # behind a proxy: its (https) Origin posts the forms
            return public
        if self._mounted is not None:
            return self._mounted
        if self._in_app:  # a loopback listener here would be on the wrong machine for the person
            raise ElicitationUnsupported(
                "this server's pages are mounted in an HTTP app reached under a name it cannot vouch for; "
                "say where people reach it: configure_pages(server, public_url='https://...')"
            )
        async with self._lock:
            if self._listener is None:
                from elicitkit.transports.http.loopback import LoopbackServer

                self._listener = LoopbackServer(self.app)
            if not self._listener.running:
                self.app.listening_at(await self._listener.start())
        return self.app.origin

    # -- claims: what tells an anonymous caller's next call from everyone else's

    def issue_claim(self) -> str:
        """A fresh claim: a random part and this server's MAC of it (so only claims it issued count)."""
        self._fleet()
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{self._mac(nonce)}"

    def valid_claim(self, claim: object) -> bool:
        """Whether ``claim`` is one this server (or its fleet) issued (compared in constant time)."""
        if not isinstance(claim, str) or claim.count(".") != 1 or len(claim) > 128:
            return False
        self._fleet()
        nonce, mac = claim.split(".")
        return hmac.compare_digest(mac.encode(), self._mac(nonce).encode())

    def _mac(self, nonce: str) -> str:
        return hmac.new(self._secret, nonce.encode(), hashlib.sha256).hexdigest()[:32]

    # -- questions by key

    async def open(
        self, key: str, message: str, schema: dict[str, Any], chain: str | None = None, *, owner: str | None = None
    ) -> tuple[Question, str]:
        """The page for question ``key`` (one caller, one call, one question): reused while open.

        ``chain``: the caller's call it belongs to (:func:`caller_of`), for :meth:`restore`; its
        answer then serves that caller's next call (a link result). ``owner``: whose page it is
        (default ``chain``): a finished page only moves on to the same owner's next question.
        Raises :class:`ElicitationUnsupported` when :attr:`PageOptions.max_pages` are open.
        """
        base = await self.base_url()
        owner = owner if owner is not None else chain
        book = self._fleet()
        if book is not None:
            question = await book.page_for(key)
            if question is not None and question.result is None and time.monotonic() > question.expires_at:
                question = None  # expired unanswered: its token is refused already
            if question is None:
                question = self._new(message, schema, owner, chain)
                await book.opened(key, question)
            return question, base + question.path
        self._prune()
        question = self.by_key.get(key)
        if question is None or (question.result is None and question.token not in self.app.questions):
            question = self._new(message, schema, owner, chain)
            self.by_key[key] = question
            if chain is not None:
                self._chain[key] = chain
        return question, base + question.path

    def _new(self, message: str, schema: dict[str, Any], owner: str | None, chain: str | None) -> Question:
        """A new page, within the cap on open pages (anyone can make a server open one)."""
        now = time.monotonic()
        for token in [t for t, until in self._opened.items() if until < now]:
            del self._opened[token]
        open_here = sum(1 for t in self._opened if t in self.app.questions or self._book is not None)
        if open_here >= self.options.max_pages:
            raise ElicitationUnsupported(
                f"this server has {self.options.max_pages} pages open, its limit; try again when some are answered"
                " or expired (configure_pages(server, max_pages=...) raises it)"
            )
        question = self.app.open(
            FormRequest(message, schema, origin=self.origin), expires_in=self.options.expires_in, owner=owner
        )
        question.later = chain is not None
        self._opened[question.token] = question.expires_at
        if self._book is not None:
            self.app.questions.pop(question.token, None)  # in a fleet the store is the truth, not this copy
        return question

    def _prune(self) -> None:
        """Forget pages that expired unanswered (their tokens are refused already), and answers
        nobody came back for within another lifetime."""
        now = time.monotonic()
        keep = self.options.expires_in
        for stale, q in list(self.by_key.items()):
            if (q.result is None and now > q.expires_at) or now > q.expires_at + keep:
                self._drop(stale)
        for spent in [k for k, entry in self._spent.items() if now > entry[4] + keep]:
            del self._spent[spent]

    async def take(self, key: str, call: object = None) -> ElicitationResult[Any] | None:
        """The answer given on ``key``'s page, once: a second call does not get it again (unless
        ``call``, the one taking it, ends up asking on a page again: :meth:`restore`)."""
        book = self._fleet()
        page: Question | str
        if book is not None:
            taken = await book.take(key)
            if taken is None:
                return None
            result, page = taken
            chain = None
        else:
            question = self.by_key.get(key)
            if question is None or question.result is None:
                return None
            del self.by_key[key]
            chain = self._chain.pop(key, None)
            result, page = question.result, question
        if call is not None:
            self._spent[key] = (chain or "", call, result, page, time.monotonic())
        return result

    async def restore(self, chain: str, call: object = None) -> None:
        """The call ``call`` took answers and then needed another page: it ends with a link, so
        the answers *it* took wait for its next attempt (a tool asking several questions gets
        them all by calling again, as on a 2026 round). Answers earlier calls used stay used."""
        book = self._fleet()
        for key in [k for k, entry in self._spent.items() if entry[1] is call and call is not None]:
            _, _, result, page, _ = self._spent.pop(key)
            if isinstance(page, str):
                if book is not None:
                    await book.put_back(key, result, page)
                continue
            if key not in self.by_key:  # else a fresh page for it is open: the person's new answer counts
                self.by_key[key] = page
                self._chain[key] = chain

    async def withdraw(self, key: str) -> None:
        """The call ended without needing the page (declined elsewhere, or error): its token dies."""
        book = self._fleet()
        if book is not None:
            await book.withdraw(key)
            return
        self._drop(key)

    def _drop(self, key: str) -> None:
        question = self.by_key.pop(key, None)
        self._chain.pop(key, None)
        if question is not None and question.result is None:
            self.app.finish(question, ElicitationResult.cancel())

    async def wait(self, question: Question, timeout: float | None) -> ElicitationResult[Any] | None:
        """The page's answer, or None after ``timeout`` seconds or when the page expires first
        (a dead page can no longer be answered: the call ends then, not at its own timeout)."""
        limit = timeout if timeout is not None else DEFAULT_EXPIRY
        limit = min(limit, max(0.0, question.expires_at - time.monotonic()))
        book = self._fleet()
        if book is not None:
            return await book.wait(question, limit)
        with anyio.move_on_after(limit):
            await question.done.wait()
        return question.result

    async def aclose(self) -> None:
        for question in list(self.app.questions.values()):
            self.app.finish(question, ElicitationResult.cancel())
        self.by_key.clear()
        self._chain.clear()
        self._spent.clear()
        self._opened.clear()
        self.app.listening_at("")
        if self._listener is not None:
            await self._listener.stop()


_HOSTS: weakref.WeakKeyDictionary[Any, PageHost] = weakref.WeakKeyDictionary()
_SESSION_IDS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def configure_pages(server: Server, **options: Any) -> PageHost:
    """Set the server-wide fallback (:class:`PageOptions` fields) and get the server's pages."""
    host = pages_of(server)
    host.options = PageOptions(**{**host.options.__dict__, **options})
    # Until a server configures a fallback or a deadline, its questions skip the ladder.
    server.page_ladder = host.options.fallback != "error" or host.options.deadline is not None
    return host


def pages_of(server: Server) -> PageHost:
    """The server's :class:`PageHost` (made on first use)."""
    host = _HOSTS.get(server)
    if host is None:
        info = server.server_info
        host = _HOSTS[server] = PageHost(str(info.get("name") or "this server"), server=server)
        host.origin = Origin(name=host.origin.name, version=info.get("version"), title=info.get("title"))
    return host


def caller_of(request: RequestScope, host: PageHost, claim: str | None = None) -> tuple[str, str | None] | None:
    """Who makes which call, as a key (and the claim it rests on, for an anonymous caller).

    So the answer given for one person's call never serves another's: a different session or
    principal, tool or arguments gives a different key. An anonymous 2026 request on the shared
    stateless HTTP session is told apart only by a claim: ``claim`` (a fresh one, from
    :meth:`PageHost.issue_claim`) or the :data:`CLAIM_ARGUMENT` it passes, if this server
    issued it. None when there is neither.
    """
    params = request.request.params
    arguments = params.get("arguments")
    given: object = None
    if isinstance(arguments, dict) and CLAIM_ARGUMENT in arguments:
        given = arguments[CLAIM_ARGUMENT]
        arguments = {k: v for k, v in arguments.items() if k != CLAIM_ARGUMENT}
    principal = request.principal
    if principal is not None:
        who, claim = "p:" + str(principal), None
    elif request.session.shared:
        if claim is None and host.valid_claim(given):
            claim = str(given)
        if claim is None:
            return None
        who = "c:" + claim
    else:
        who, claim = "s:" + _session_id(request.session), None
    call = repr((request.request.method, params.get("name") or params.get("uri"), arguments))
    return hashlib.sha256(f"{who}\0{call}".encode()).hexdigest(), claim


def question_key(chain: str, question: str) -> str:
    """One question of one caller's call: the key its page and answer are filed under."""
    return hashlib.sha256(f"{chain}\0{question}".encode()).hexdigest()


def _origin_of(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}"


def _session_id(session: Any) -> str:
    known = _SESSION_IDS.get(session)
    if known is None:
        known = _SESSION_IDS[session] = secrets.token_hex(16)
    return known
