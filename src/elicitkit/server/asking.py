"""Asking the client from inside a request, on every era.

What a question is (schema, gate, validation, results) lives in :mod:`elicitkit.elicitation`;
how it travels is the request scope's (:mod:`elicitkit.server.scope`: sent now on a handshake
connection, added to the round on 2026-07-28, parked in a task's record). This module checks
capabilities, counts questions, and runs the page ladder (:mod:`elicitkit.server.pages`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, cast

from orjson import Fragment

from elicitkit.elicitation import answers
from elicitkit.elicitation.answers import compiled_schema, parse_result
from elicitkit.elicitation.errors import (
    ElicitationTimeout,
    ElicitationUnsupported,
    InvalidAnswer,
    UrlElicitationRequired,
)
from elicitkit.elicitation.requests import UrlRequest, form_params
from elicitkit.elicitation.results import AcceptedElicitation, ElicitationResult, accepted
from elicitkit.elicitation.schema import Form
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.protocol.versions import LATEST_LEGACY, supports_url_elicitation
from elicitkit.server import signals
from elicitkit.server.content import error_result
from elicitkit.server.pages import AnswerOnPage, PageHost, caller_of, pages_of, question_key
from elicitkit.server.rounds.round import InputRequired
from elicitkit.server.rounds.sealing import fingerprint_asked, schema_json
from elicitkit.server.scope import RequestScope, TooManyQuestions
from elicitkit.telemetry import hook as telemetry

if TYPE_CHECKING:
    from elicitkit.telemetry.otel import OTel

__all__ = [
    "DEFAULT_TIMEOUT",
    "TooManyQuestions",
    "ask_form",
    "ask_url",
    "request_input",
    "request_inputs",
    "url_required",
]

logger = logging.getLogger("elicitkit.elicitation")

DEFAULT_TIMEOUT = 600.0
"""Seconds a question waits for its answer by default: a person is answering, give them time."""


def _require_mode(request: RequestScope, mode: str) -> str:
    version = request.protocol_version or LATEST_LEGACY
    if mode not in request.elicitation_modes:
        declared = sorted(request.elicitation_modes) or "no elicitation at all"
        modes = ", ".join(sorted(request.elicitation_modes)) or "no elicitation at all"
        raise request.lacks(
            {"elicitation": {mode: {}}},
            f"the client cannot be asked in {mode} mode (it declared: {declared})",
            need=f"this request needs the client capability elicitation in {mode} mode (the client declared: {modes})",
        )
    if mode == "url" and not supports_url_elicitation(version):
        raise ElicitationUnsupported(f"URL elicitation needs protocol 2025-11-25; this client speaks {version}")
    return version


def _form_question(
    request: RequestScope,
    message: str,
    form: Form,
    schema: dict[str, Any],
    version: str,
    timeout: float | None,
    max_attempts: int,
    key: str | None,
) -> Coroutine[Any, Any, ElicitationResult[Any]]:
    """The form question itself, however the scope puts it: the typed result (await it; a plain
    function, so no frame of ours waits while a person answers)."""
    question = _FormQuestion(message, form, schema, version)
    limit = DEFAULT_TIMEOUT if timeout is None else timeout
    # Every scope kind's elicit_checked is a coroutine function
    asked = request.elicit_checked(question, timeout=limit, attempts=max_attempts, key=key)
    return cast("Coroutine[Any, Any, ElicitationResult[Any]]", asked)


class _FormQuestion:
    """How a form question is put and its answer read: one small object kept by a waiting
    question (two closures and their cells were three times the size)."""

    __slots__ = ("form", "memo", "message", "schema", "version")

    def __init__(self, message: str, form: Form, schema: dict[str, Any], version: str) -> None:
        self.message, self.form, self.schema, self.version = message, form, schema, version
        # Only a model's form has its schema's work kept: its gated schema is the form's own,
        # never changed; a hand-written schema may be the caller's dict, changed between calls.
        self.memo = _memo(schema) if form.model is not None else None

    def phrase(self, reason: InvalidAnswer | None) -> JSON:
        message = self.message if reason is None else _again(self.message, reason)
        return form_params(message, self.schema, self.version)

    def check(self, raw: JSON) -> ElicitationResult[Any]:
        memo = self.memo
        compiled = memo.compiled if memo is not None else None
        if type(raw) is dict and raw.get("action") == "accept":  # parse_result's accept, typed: one result made
            content = raw.get("content")
            checked = answers.validate_answer(self.schema, content if content is not None else {}, compiled=compiled)
            return accepted(self.form.parse(checked), checked)
        return _typed(parse_result(raw, mode="form", schema=self.schema, compiled=compiled), self.form)

    def fingerprint(self, method: str, params: JSON) -> str:
        """:func:`~elicitkit.server.rounds.sealing.fingerprint_question` of this question as
        phrased in ``params``, the schema's canonical JSON made once per schema (a 2026 call
        fingerprints its question on every run)."""
        memo = self.memo
        return fingerprint_asked(method, params, memo.fragment if memo is not None else None)


class _SchemaMemo:
    """What a model form's gated schema costs to use, made once: its canonical JSON (the
    question's fingerprint) and its compiled check (the answer's)."""

    __slots__ = ("_compiled", "fragment", "schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema  # held: its id cannot be reused while the entry lives
        self.fragment: Fragment | None = schema_json(schema)
        self._compiled: tuple[Any, Any] | None = None

    @property
    def compiled(self) -> tuple[Any, Any]:
        if self._compiled is None:
            self._compiled = compiled_schema(self.schema)
        return self._compiled


_MEMOS: dict[int, _SchemaMemo] = {}  # id(schema) -> its memo
_MEMOS_SIZE = 256


def _memo(schema: dict[str, Any]) -> _SchemaMemo:
    found = _MEMOS.get(id(schema))
    if found is not None and found.schema is schema:
        return found
    made = _SchemaMemo(schema)
    if len(_MEMOS) >= _MEMOS_SIZE:
        del _MEMOS[next(iter(_MEMOS))]
    _MEMOS[id(schema)] = made
    return made


async def _raise(exc: Exception) -> Any:
    raise exc


def ask_form(
    request: RequestScope,
    message: str,
    form: Form,
    *,
    timeout: float | None = None,
    max_attempts: int = 1,
    key: str | None = None,
    via: str | None = None,
    fallback: str | None = None,
    deadline: float | None = None,
) -> Coroutine[Any, Any, ElicitationResult[Any]]:
    """Ask a form question; ``max_attempts`` > 1 re-asks with the reason when the answer does not fit.

    Handshake eras send ``elicitation/create`` now and wait; 2026 answers from the retry, or ends
    the round with the question (:mod:`elicitkit.server.rounds.round`). ``via="web"``: always on
    the server's own page (:mod:`elicitkit.server.pages`). ``fallback="page"`` (default: the
    server's :class:`~elicitkit.server.pages.PageOptions`): a client without form mode gets the
    page instead, and so does one that does not answer within ``deadline`` seconds (2025: the
    form is withdrawn; 2026: a retry past it without the answer gets the link).
    """
    if via is not None or fallback is not None or deadline is not None or request.session.server.page_ladder:
        return _ask_with_fallback(request, message, form, timeout, max_attempts, key, via, fallback, deadline)
    # A plain function handing back the question's coroutine (no frame of ours while a person
    # answers); what fails before asking is raised where it is awaited, as before.
    try:
        if "form" in request.elicitation_modes:  # (_require_mode's form case, without its call)
            version = request.protocol_version or LATEST_LEGACY
        else:
            version = _require_mode(request, "form")
        schema = form.schema_for(version)
    except Exception as exc:
        return _raise(exc)
    # (_form_question, inline: every question asked takes this way)
    question = _FormQuestion(message, form, schema, version)
    asked = request.elicit_checked(
        question, timeout=DEFAULT_TIMEOUT if timeout is None else timeout, attempts=max_attempts, key=key
    )
    return cast("Coroutine[Any, Any, ElicitationResult[Any]]", asked)


async def _ask_with_fallback(
    request: RequestScope,
    message: str,
    form: Form,
    timeout: float | None,
    max_attempts: int,
    key: str | None,
    via: str | None,
    fallback: str | None,
    deadline: float | None,
) -> ElicitationResult[Any]:
    """The ladder: the page when asked for (``via="web"``), or when the client cannot take the form."""
    if via not in (None, "client", "web"):
        raise ValueError(f"via must be 'client' or 'web', not {via!r}")
    options = pages_of(request.session.server).options
    fallback = fallback or options.fallback
    if fallback not in ("page", "error"):
        raise ValueError(f"fallback must be 'page' or 'error', not {fallback!r}")
    deadline = deadline if deadline is not None else options.deadline
    if via == "web" or (fallback == "page" and "form" not in request.elicitation_modes):
        if via != "web" and telemetry.current is not None:
            telemetry.current.page_fallback("no_form_mode")
        return await _ask_on_page(request, message, form, timeout, key)
    version = _require_mode(request, "form")
    schema = form.schema_for(version)
    if fallback != "page" or deadline is None:
        return await _form_question(request, message, form, schema, version, timeout, max_attempts, key)
    host = pages_of(request.session.server)
    page_key = _page_key(request, host, message, form, key)
    answered = await host.take(page_key) if page_key is not None else None
    if answered is not None:  # answered on the page after an earlier call's deadline: this call continues
        return _typed(answered, form)
    try:
        return await _form_question(request, message, form, schema, version, deadline, max_attempts, key)
    except ElicitationTimeout:  # withdrawn (notifications/cancelled): the person gets the link instead
        pass
    except InputRequired as exc:  # 2026: the question stays open unless an earlier round's deadline passed
        if not request.overdue(str(exc.args[0]), deadline):
            raise
    logger.info("no answer within the %gs deadline; the question goes to a page", deadline)
    if telemetry.current is not None:
        telemetry.current.page_fallback("deadline")
    return await _ask_on_page(request, message, form, timeout, key, link_only=True)


async def _ask_on_page(
    request: RequestScope,
    message: str,
    form: Form,
    timeout: float | None,
    key: str | None,
    *,
    link_only: bool = False,
) -> ElicitationResult[Any]:
    """Ask on the server's own page: a URL-mode question pointing at it, or (a client that cannot
    open URLs) a link result, the answer then serving the same caller's next identical call.

    The same caller (:func:`~elicitkit.server.pages.caller_of`): its session or principal; an
    anonymous stateless 2026 caller is told apart by its round's sealed state (URL mode) or by
    a claim the link result hands it to pass back, so another caller never gets its answer."""
    version = request.protocol_version or LATEST_LEGACY
    schema = form.schema_for(version)
    host = pages_of(request.session.server)
    question_id = _question_id(message, form, key)
    url_ok = "url" in request.elicitation_modes and supports_url_elicitation(version) and not link_only
    caller = caller_of(request, host)
    if caller is None:  # an anonymous caller on the shared stateless session: tell it apart ourselves
        nonce = request.sealed_nonce(f"page:{key or message}") if url_ok else None
        if nonce is not None:  # the round's sealed state, echoed by this caller only
            caller = ("sealed:" + nonce, None)
        elif request.request.method == "tools/call" or request.request.method == "prompts/get":
            caller = caller_of(request, host, host.issue_claim())  # handed out with the link
        else:
            raise ElicitationUnsupported(
                f"server pages cannot take an anonymous {request.request.method} on stateless HTTP: it has no "
                "arguments to carry back the claim by which its caller is told apart from others, and a page "
                "answer must never serve someone else's call; authenticate callers (a principal), or use a "
                "client that declares elicitation"
            )
        assert caller is not None
    chain, claim = caller
    qkey = question_key(chain, question_id)
    tel = telemetry.current
    if not url_ok:
        answered = await host.take(qkey, request)
        if answered is not None:
            if tel is not None:  # answered on the page since an earlier call: not timed here
                _page_signal(tel, request, message, schema, key, answered, None)
            return _typed(answered, form)
        _question, url = await host.open(qkey, message, schema, chain)
        if tel is not None:
            _page_signal(tel, request, message, schema, key, None, None)
        await host.restore(chain, request)  # answers this call took wait for its next attempt, with this one
        raise AnswerOnPage(url, message, claim)
    question, url = await host.open(qkey, message, schema, owner=chain)
    put = _page_signal(tel, request, message, schema, key, None, None) if tel is not None else 0.0
    request.count()
    elicitation_id = hashlib.sha256(question.token.encode()).hexdigest()[:32]
    params = UrlRequest(message, url, elicitation_id).to_params(version)
    raw = await request.elicit(params, timeout=DEFAULT_TIMEOUT if timeout is None else timeout, key=key)
    consent: ElicitationResult[None] = parse_result(raw, mode="url")
    if not consent.accepted:
        await host.withdraw(qkey)
        return consent
    answer = question.result if question.result is not None else await host.wait(question, timeout)
    if answer is None:
        await host.withdraw(qkey)
        raise ElicitationTimeout("no answer on the page in time; the page was withdrawn")
    if await request.url_finished(elicitation_id):
        await host.take(qkey)
    if tel is not None:
        _page_signal(tel, request, message, schema, key, answer, put)
    return _typed(answer, form)


def _page_signal(
    tel: OTel,
    request: RequestScope,
    message: str,
    schema: JSON,
    key: str | None,
    answer: ElicitationResult[Any] | None,
    since: float | None,
) -> float:
    """A question on the server's page: put (``answer`` None) or answered; when it was put."""
    params: JSON = {"mode": "form", "message": message, "requestedSchema": schema}
    era = request.protocol_version
    if answer is None:
        return signals.asked(tel, params, era=era, round_=None, key=key, origin="page").started
    raw: JSON = {"action": answer.action.value}
    if isinstance(answer, AcceptedElicitation):
        raw["content"] = answer.content
    signals.answered(tel, params, raw, era=era, round_=None, key=key, origin="page", since=since)
    return since or 0.0


def _question_id(message: str, form: Form, key: str | None) -> str:
    """The question itself, the same on every era (the legacy schema), to file its page under."""
    return f"{key or ''}\0{message}\0{sorted(form.schema_for(LATEST_LEGACY).items())!r}"


def _page_key(request: RequestScope, host: PageHost, message: str, form: Form, key: str | None) -> str | None:
    """The key this caller's page for this question has, if the caller can be told apart at all."""
    caller = caller_of(request, host)
    return None if caller is None else question_key(caller[0], _question_id(message, form, key))


def _again(message: str, exc: InvalidAnswer) -> str:
    return f"{message}\n\n(Your previous answer was not accepted: {exc.reason}. Please try again.)"


def _typed(outcome: ElicitationResult[Any], form: Form) -> ElicitationResult[Any]:
    if isinstance(outcome, AcceptedElicitation):
        content = outcome.content or {}
        return AcceptedElicitation(data=form.parse(content), content=content)
    return outcome


async def ask_url(
    request: RequestScope, url_request: UrlRequest, *, timeout: float | None = None, key: str | None = None
) -> ElicitationResult[None]:
    """Ask the user to visit a URL; ``accept`` means they agreed to go, not that they finished."""
    version = _require_mode(request, "url")
    request.count()
    params = url_request.to_params(version)
    raw = await request.elicit(params, timeout=DEFAULT_TIMEOUT if timeout is None else timeout, key=key)
    result: ElicitationResult[None] = parse_result(raw, mode="url")
    return result


_CAPABILITY = {"sampling/createMessage": "sampling", "roots/list": "roots", "elicitation/create": "elicitation"}


def _require_capability(request: RequestScope, method: str) -> None:
    needed = _CAPABILITY.get(method)
    if needed is not None and not request.client_supports(needed):
        raise request.lacks({needed: {}}, f"the client did not declare the {needed} capability")


async def request_input(request: RequestScope, method: str, params: dict[str, Any], *, key: str | None = None) -> Any:
    """Any input request (sampling, roots, elicitation) on either era, raw result back."""
    _require_capability(request, method)
    request.count()
    return await request.ask(method, params, key=key)


async def request_inputs(request: RequestScope, requests: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Several input requests at once: one round in 2026, one after another on a handshake."""
    for method, _params in requests.values():
        _require_capability(request, method)
    request.count(len(requests))
    return await request.ask_all(requests)


def url_required(request: RequestScope, exc: UrlElicitationRequired) -> JSON:
    """A tool raised :class:`UrlElicitationRequired`: -32042 on 2025-11-25; on 2026 (which has
    no -32042) the URLs become this round's inputs; an ``isError`` result for a client that
    cannot open URLs at all; :class:`~elicitkit.server.pages.AnswerOnPage`: an ordinary result
    with the link to the server's own page."""
    if isinstance(exc, AnswerOnPage):
        return exc.result()
    if "url" not in request.elicitation_modes or not supports_url_elicitation(request.protocol_version):
        return error_result(f"{exc.message} (this client cannot open URL elicitations)")
    return request.url_inputs(exc)
