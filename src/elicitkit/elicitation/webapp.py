"""The web app behind every form page, the client's and the server's: one-time URLs, the checks, the steps.

Written once for both sides: the client's browser handler serves it on a loopback port, the
server serves it beside its MCP endpoint (or on a loopback port over stdio); only the path
prefix and the Host it answers to differ.

:class:`FormApp` is a small ASGI app that knows the open questions by their one-time token
and moves each through its steps (form -> review -> send, or the URL consent), rendering
every page with the pure functions of :mod:`.page`. It trusts nothing it is sent:

- a question's token (``secrets.token_urlsafe``) is compared in constant time and dies when
  the question ends; an unknown or spent token gets 404;
- the ``Host`` header must name our own address (DNS rebinding);
- a POST must carry the page's CSRF secret, must not come from a foreign ``Origin`` or
  ``Sec-Fetch-Site``, must be an urlencoded form of at most :data:`MAX_BODY` bytes;
- "Send" must carry the id of the review page it was pressed on, so a stale page cannot
  send answers that changed since;
- a look-alike URL opens only when the person typed its real (ASCII) name;
- every response, errors included, carries :data:`~.page.SECURITY_HEADERS`.

Every accepted POST is answered with 303 See Other to the question's page (post/redirect/get):
the browser's Back and Reload then never resend a form. A GET shows the step the question is
at, and after the person ends it, how it ended (or the same server's next question, so a run
of questions stays in one tab); pages that wait for something update through a ``Refresh``
header, with no script.

It does not listen anywhere itself (:mod:`elicitkit.transports.http.loopback` or the server's
HTTP app does) and does not ask anyone (the client's browser handler or the server's
:mod:`elicitkit.server.pages` does): it only answers HTTP requests.
"""

from __future__ import annotations

import hmac
import logging
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import parse_qsl

import anyio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, Response
from starlette.types import Receive, Scope, Send

from elicitkit.elicitation.errors import InvalidAnswer
from elicitkit.elicitation.fields import FormField, answer_content, form_fields
from elicitkit.elicitation.page import (
    FOLLOW_EVERY,
    SECURITY_HEADERS,
    Outcome,
    WaitState,
    confirmed_domain,
    done_page,
    error_page,
    form_page,
    initial_raw,
    is_yes_no,
    method_not_allowed_page,
    openable,
    read_answers,
    review_page,
    url_page,
    waiting_page,
)
from elicitkit.elicitation.requests import ElicitRequest, FormRequest, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.elicitation.urls import assess_url

__all__ = ["FOLLOW_FOR", "MAX_BODY", "FormApp", "Question", "QuestionStore"]

logger = logging.getLogger("elicitkit.client.handlers.browser")

MAX_BODY = 1 << 20  # a form post larger than this is refused (413)
_MAX_FIELDS = 10_000
_MAX_CLOSED = 64  # closed questions whose last page is still shown (Back, Reload)
_REFRESH = {"Refresh": str(FOLLOW_EVERY)}  # the header form: a page updates itself without script
FOLLOW_FOR = 20.0  # seconds a finished question's page looks out for the same server's next question


@dataclass(eq=False)
class Question:
    """One question: what was asked, where the person is in it, and how it ended."""

    request: ElicitRequest
    token: str
    csrf: str
    done: anyio.Event
    fields: list[FormField]
    raw: dict[str, list[str]]  # what the inputs hold, as the browser sends it, per field name
    stage: Literal["form", "review", "closed"] = "form"
    errors: dict[str | None, str] = field(default_factory=dict)
    notice: str | None = None  # shown once, on the next GET of the form
    content: dict[str, Any] | None = None  # the checked answer awaiting "Send"
    defaulted: frozenset[str] = frozenset()  # fields left empty that the schema's default filled
    review_id: str = ""
    result: ElicitationResult[Any] | None = None
    outcome: Outcome | Literal["opened"] | None = None  # set when the person ended it on the page
    wait_state: WaitState = "waiting"  # a URL question after consent
    step: int = 1  # its place in a run of questions from one server shown in one tab
    next: Question | None = None  # the same server's next question, which this tab follows on to
    previous: Question | None = None  # the question whose page may pick this one up
    followed_at: float = -math.inf  # when its page was last served as looking out for a next question
    claimed: anyio.Event = field(default_factory=anyio.Event)  # a browser has loaded its page
    closed_at: float = 0.0
    prefix: str = "/q/"  # the app's path prefix
    expires_at: float = math.inf  # monotonic time after which its token is refused
    seen_at: float = -math.inf  # when its page was last served (monotonic)
    key: str | None = None  # the asker's name for it (a server's page key), kept with it wherever it is stored
    later: bool = False  # the answer serves the caller's next call (a host without elicitation), not one waiting
    revealed: bool = False  # the review page shows secrets in clear, asked for by the person
    owner: str | None = None  # whose question it is: a page only ever moves on to its owner's next one
    site_opened: bool | None = None  # a URL question after consent: did a browser open the site (None: unknown)

    @property
    def path(self) -> str:
        """Where the question's pages are served (and post to)."""
        return f"{self.prefix}{self.token}"

    @property
    def reloads(self) -> bool:
        """Its page, as last served, reloads itself (a done page looking out, a waiting page)."""
        if self.outcome == "opened":
            return self.wait_state == "waiting"
        return self.outcome is not None and self.followed_at >= self.seen_at

    @property
    def follows(self) -> bool:
        """It comes right after a question answered on a page that is still looking out for it."""
        if self.previous is None:
            return False
        # Just answered (its done page is on its way) or its done page was served lately.
        seen = max(self.previous.followed_at, self.previous.closed_at)
        return time.monotonic() - seen < FOLLOW_EVERY + 1


class QuestionStore(Protocol):
    """Where questions live when many processes serve them (a fleet): the truth for every request."""

    async def load(self, token: str) -> Question | None:
        """The question with ``token`` as stored now (None: unknown, or gone)."""
        ...

    async def save(self, question: Question) -> Question:
        """Store ``question`` after a step; returns the stored one (the first answer wins a race)."""
        ...


class _Refused(Exception):
    def __init__(self, status: int, title: str, text: str) -> None:
        super().__init__(text)
        self.status, self.title, self.text = status, title, text


class FormApp:
    """The ASGI app serving every open question's pages; it answers only at the address set by :meth:`listening_at`.

    Every POST is answered with 303 See Other to the question's page (post/redirect/get), so
    the browser's Back and Reload never resend a form; the page a GET shows is the one of the
    step the question is at, including after it ended (for a while: :data:`_MAX_CLOSED`).
    """

    def __init__(
        self, *, prefix: str = "/q/", allow_host: Callable[[str], bool] | None = None, server: bool = False
    ) -> None:
        """``prefix``: the path under which questions are served (``<prefix><token>``).

        ``server``: the app of a server, whose pages many people open (each question then has
        an owner, and the pages say the server at their address serves them); else the
        client's, for the one person at this computer.

        ``allow_host``: when set (an app mounted in a bigger one), which ``Host`` headers it
        answers to; a POST's ``Origin`` must then be the page's own (``<scheme>://<Host>``).
        Unset: only the one address given to :meth:`listening_at` (a loopback listener).
        """
        self.questions: dict[str, Question] = {}
        self.closed: OrderedDict[str, Question] = OrderedDict()
        self.prefix = prefix
        self.allow_host = allow_host
        self.origins: set[str] = set()  # further Origins a POST may come from (a proxy's public one)
        self.host = ""  # the one Host header we answer to ("" while not listening: everything refused)
        self.origin = ""
        self.server = server  # served by a server for many people (else the client, for one person)
        self.lingering = False  # the client is exiting: pages stop reloading themselves
        self.store: QuestionStore | None = None  # a fleet: every request loads and saves its question there

    def listening_at(self, host: str) -> None:
        """Answer requests made to ``host`` (``127.0.0.1:<port>``); "" to refuse them all."""
        self.host = host
        self.origin = f"http://{host}" if host else ""

    def open(self, request: ElicitRequest, *, expires_in: float | None = None, owner: str | None = None) -> Question:
        """A new question with fresh secrets, served from now on at its :attr:`Question.path`.

        When the same owner's previous question was just answered on a page, that page moves
        on to this one (a run of questions in one tab, with a step number). ``owner``: whose
        question it is (a session, principal or claim). On a :attr:`server`'s app a question
        without an owner is never followed on to, and never follows: many people share it.
        """
        fields = form_fields(request.requested_schema) if isinstance(request, FormRequest) else []
        question = Question(
            request=request,
            token=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            done=anyio.Event(),
            fields=fields,
            raw={f.name: initial_raw(f) for f in fields},
            prefix=self.prefix,
            expires_at=math.inf if expires_in is None else time.monotonic() + expires_in,
            owner=owner,
        )
        previous = self._followed_by(request, owner)
        if previous is not None:
            previous.next = question
            question.step, question.previous = previous.step + 1, previous
        self.questions[question.token] = question
        return question

    def _followed_by(self, request: ElicitRequest, owner: str | None) -> Question | None:
        """The page this question moves into: the owner's question answered last, if its page looks out."""
        if self.server and owner is None:
            return None
        now = time.monotonic()
        for closed in reversed(self.closed.values()):
            if closed.owner != owner:
                continue  # another person's page: never theirs to show
            if closed.outcome in ("sent", "declined", "cancelled") and closed.next is None:
                if now - closed.closed_at < FOLLOW_FOR and closed.request.origin == request.origin:
                    return closed
                return None
        return None

    def forget(self, question: Question) -> None:
        """Stop serving ``question`` unless the person ended it on its page (that page stays readable)."""
        self.questions.pop(question.token, None)
        if question.outcome is None:
            self.closed.pop(question.token, None)

    def finish(self, question: Question, result: ElicitationResult[Any], outcome: Outcome | None = None) -> None:
        """End ``question`` with ``result`` (the first result wins) and wake whoever waits for it.

        ``outcome``: how the person ended it on the page; the page then keeps showing it.
        """
        if question.result is None:
            question.result = result
            if outcome is not None or (isinstance(question.request, UrlRequest) and result.accepted):
                question.outcome = outcome or "opened"
                question.stage, question.closed_at = "closed", time.monotonic()
                self.closed[question.token] = question
                while len(self.closed) > _MAX_CLOSED:
                    self.closed.popitem(last=False)
        self.questions.pop(question.token, None)
        question.done.set()

    # -- HTTP ---------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        try:
            response = await self._route(request)
        except ClientDisconnect:  # the browser went away mid-request: nothing to answer, nothing broke
            logger.debug("a browser disconnected during a %s of a page", request.method)  # the path holds the token
            return
        except _Refused as refused:
            if refused.status != 404:
                logger.warning("browser form refused a request: %s %s", refused.status, refused.text)
            response = _html(error_page(refused.status, refused.title, refused.text), refused.status)
        except Exception:  # still a page with the security headers, and no details for the browser
            logger.exception("the browser form failed on a %s of a page", request.method)  # never the token
            who = "server" if self.server else "client"
            response = _html(error_page(500, "Error", f"Something went wrong in the {who}; see its log."), 500)
        await response(scope, receive, send)

    def _find(self, token: str, *, closed: bool = False) -> Question | None:
        wanted = token.encode()
        found = None
        for known, question in [*self.questions.items(), *(self.closed.items() if closed else ())]:
            if hmac.compare_digest(known.encode(), wanted):
                found = question
        if found is not None and found.outcome is None and time.monotonic() > found.expires_at:
            return None  # expired: refused like an unknown token
        return found

    def served_by(self, request: Request) -> str | None:
        """Who serves the page, as it says: None for the client on this computer, else the server's origin."""
        if not self.server:
            return None
        return f"{request.url.scheme}://{request.headers.get('host', '')}"

    async def _route(self, request: Request) -> Response:
        hosts = request.headers.getlist("host")
        host = hosts[0] if len(hosts) == 1 else ""  # two Host fields: which one is meant is anyone's guess
        allowed = self.allow_host(host) if self.allow_host is not None else self.host and host == self.host
        if not host or not allowed:
            raise _Refused(403, "Refused", "This page is only served at its own address.")
        path: str = request.scope["path"]
        token = path[len(self.prefix) :] if path.startswith(self.prefix) else ""
        question = await self._lookup(token) if token else None
        if question is None:
            raise _Refused(
                404,
                "Not found",
                "This question is not open: the link is wrong, or it was already answered or withdrawn.",
            )
        served_by = self.served_by(request)
        if request.method == "GET":
            question.claimed.set()
            had_notice = question.notice is not None
            shown = self._show(question, still=request.query_params.get("still") == "1", served_by=served_by)
            if self.store is not None and had_notice:
                await self.store.save(question)  # a notice is shown once
            return shown
        if request.method != "POST":
            return _html(method_not_allowed_page(), 405, {"Allow": "GET, POST"})
        self._check_post(request)
        posted = await _read_form(request)
        if not hmac.compare_digest(_first(posted, "csrf").encode(), question.csrf.encode()):
            who = "the server at this address" if self.server else "this client"
            raise _Refused(403, "Refused", f"This form was not sent by a page {who} served.")
        if question.outcome is not None:  # an old page's button (Back, then Send): show where things stand
            question.notice = "already"
            return _see_other(question.path)
        action = _first(posted, "action")
        if isinstance(question.request, UrlRequest):
            self._url_action(question, action, posted)
        else:
            self._form_action(question, action, posted)
        if self.store is not None:
            await self.store.save(question)
        return _see_other(question.path)

    async def _lookup(self, token: str) -> Question | None:
        """The question a request names: from the shared store in a fleet, else from memory."""
        if self.store is None:
            return self._find(token, closed=True)
        question = await self.store.load(token)
        if question is not None and question.outcome is None and time.monotonic() > question.expires_at:
            return None
        return question

    def _show(self, q: Question, *, still: bool = False, served_by: str | None = None) -> Response:
        """GET: the page of the step ``q`` is at (after it ended: its outcome, or the next question).

        A page that waits for something (a completion notice, a next question) is served with
        a ``Refresh`` header, so it updates without script; ``still`` (``?still=1``) stops that.
        """
        q.seen_at = time.monotonic()
        if q.outcome == "opened":
            assert isinstance(q.request, UrlRequest)
            updating = q.wait_state == "waiting" and not still and not self.lingering
            page = waiting_page(
                q.request.origin,
                q.request.url,
                q.wait_state,
                updating=updating,
                opened=q.site_opened,
                served_by=served_by,
            )
            return _html(page, headers=_REFRESH if updating else None)
        if q.outcome is not None:
            nxt = q.next
            if nxt is not None and nxt.token in self.questions:
                return _see_other(nxt.path)  # this tab moves on to the same server's next question
            follow = nxt is None and not still and not self.lingering and time.monotonic() - q.closed_at < FOLLOW_FOR
            if self.server and q.owner is None:
                follow = False  # nobody's next question can be told to be this person's
            if follow:
                q.followed_at = time.monotonic()
            already, q.notice = q.notice == "already", None
            page = done_page(
                q.request.origin,
                q.outcome,
                follow=follow,
                step=q.step,
                served_by=served_by,
                already=already,
                elsewhere=q.later,
            )
            return _html(page, headers=_REFRESH if follow else None)
        if isinstance(q.request, UrlRequest):
            problem = q.errors.get(None)
            page = url_page(
                message=q.request.message,
                origin=q.request.origin,
                url=q.request.url,
                action=q.path,
                csrf=q.csrf,
                problem=problem,
                reason=q.request.reason,
                served_by=served_by,
            )
            return _html(page)
        notice, q.notice = q.notice, None
        if q.stage == "review" and q.content is not None:
            return _html(_review(q, notice, served_by))
        return _html(_form(q, notice, served_by))

    def _check_post(self, request: Request) -> None:
        origin = request.headers.get("origin")
        own = self.origin if self.allow_host is None else f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin is not None and origin != own and origin not in self.origins:
            raise _Refused(403, "Refused", "A form on another site tried to answer this question.")
        site = request.headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            raise _Refused(403, "Refused", "A form on another site tried to answer this question.")

    def _form_action(self, q: Question, action: str, posted: Mapping[str, list[str]]) -> None:
        assert isinstance(q.request, FormRequest)
        if action == "decline":
            self.finish(q, ElicitationResult.decline(), "declined")
        elif action == "cancel":
            self.finish(q, ElicitationResult.cancel(), "cancelled")
        elif action == "change":
            q.stage, q.errors, q.content, q.revealed = "form", {}, None, False
        elif action in ("reveal", "hide") and q.stage == "review":
            q.revealed = action == "reveal"  # the person checks what was pasted; shown on their next GET only
        elif action in ("yes", "no") and is_yes_no(q.fields):
            try:
                content = answer_content(q.request.requested_schema, {q.fields[0].name: action == "yes"})
            except InvalidAnswer as exc:
                q.errors = {None: exc.reason}
                return
            self.finish(q, ElicitationResult.accept(content), "sent")
        elif action == "send":
            fresh = q.stage == "review" and q.content is not None
            if not fresh or not hmac.compare_digest(_first(posted, "review").encode(), q.review_id.encode()):
                q.notice = "These answers changed since that review page was shown; please review them again."
                return
            assert q.content is not None
            self.finish(q, ElicitationResult.accept(q.content), "sent")
        elif action == "review":
            self._review_action(q, posted)
        else:
            raise _Refused(400, "Bad request", "Unknown action.")

    def _review_action(self, q: Question, posted: Mapping[str, list[str]]) -> None:
        assert isinstance(q.request, FormRequest)
        q.raw, values, q.errors = read_answers(q.request.requested_schema, q.fields, posted)
        if not q.errors:
            try:
                q.content = answer_content(q.request.requested_schema, values)
            except InvalidAnswer as exc:  # check_form passed, so this is not expected; still never send it
                q.errors = {name: reason for name, reason in exc.problems}
        if q.errors:
            q.stage, q.content = "form", None
            return
        assert q.content is not None
        q.defaulted = frozenset(f.name for f in q.fields if values.get(f.name) is None and f.name in q.content)
        q.stage, q.review_id, q.revealed = "review", secrets.token_urlsafe(16), False

    def _url_action(self, q: Question, action: str, posted: Mapping[str, list[str]]) -> None:
        assert isinstance(q.request, UrlRequest)
        if action == "decline":
            self.finish(q, ElicitationResult.decline(), "declined")
            return
        if action == "cancel":
            self.finish(q, ElicitationResult.cancel(), "cancelled")
            return
        facts = assess_url(q.request.url)
        if action != "open" or not openable(q.request.url, facts):
            raise _Refused(400, "Bad request", "This address cannot be opened from here.")
        if facts.lookalike and not confirmed_domain(_first(posted, "confirm"), facts):
            q.errors = {None: f"Nothing was opened: to open it, type its real name, {facts.ascii_host}, exactly."}
            return
        self.finish(q, ElicitationResult.accept())


# ------------------------------------------------------------------------------ a question's pages


def _form(q: Question, notice: str | None = None, served_by: str | None = None) -> str:
    assert isinstance(q.request, FormRequest)
    schema = q.request.requested_schema
    title = schema.get("title")
    return form_page(
        message=q.request.message,
        origin=q.request.origin,
        fields=q.fields,
        raw=q.raw,
        errors=q.errors,
        action=q.path,
        csrf=q.csrf,
        title=title if isinstance(title, str) else None,
        notice=notice,
        step=q.step,
        served_by=served_by,
    )


def _review(q: Question, notice: str | None = None, served_by: str | None = None) -> str:
    assert isinstance(q.request, FormRequest) and q.content is not None
    return review_page(
        message=q.request.message,
        origin=q.request.origin,
        fields=q.fields,
        content=q.content,
        action=q.path,
        csrf=q.csrf,
        review_id=q.review_id,
        defaulted=q.defaulted,
        step=q.step,
        notice=notice,
        served_by=served_by,
        revealed=q.revealed,
    )


# ------------------------------------------------------------------------------ HTTP pieces


def _html(content: str, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return HTMLResponse(content, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})})


def _see_other(path: str) -> Response:
    """303 See Other: after a POST the browser GETs the page, so Back and Reload never resend the form."""
    return Response(status_code=303, headers={**SECURITY_HEADERS, "Location": path})


def _first(posted: Mapping[str, list[str]], key: str) -> str:
    values = posted.get(key)
    return values[0] if values else ""


async def _read_form(request: Request) -> dict[str, list[str]]:
    """The POSTed urlencoded form, size-capped; refuses anything else."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise _Refused(415, "Unsupported form", "Expected an HTML form post.")
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        raise _Refused(413, "Too large", "That form is too large.")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_BODY:
            raise _Refused(413, "Too large", "That form is too large.")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=_MAX_FIELDS)
    except (UnicodeDecodeError, ValueError):
        raise _Refused(400, "Bad request", "That form could not be read.") from None
    posted: dict[str, list[str]] = {}
    for key, value in pairs:
        posted.setdefault(key, []).append(value)
    return posted
