"""Asking the client from inside a request, on every era; the one place that picks the route.

On a handshake connection (2025-06-18 / 2025-11-25) the question goes out as an
``elicitation/create`` request on the stream of the call that asks, and the answer comes back
into the same call ("send now"). On a 2026-07-28 connection it goes into the round's
InputRequiredResult and the answer arrives with the retry ("add to the round",
:mod:`elicitkit.server.rounds.round`): a question with no answer yet raises
:class:`~elicitkit.server.rounds.round.InputRequired`, which user code cannot catch. Everything about the
question itself (schema, gate, validation, results) lives in :mod:`elicitkit.elicitation`;
this module checks capabilities, sends or defers, and re-asks when an answer does not fit.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import secrets
import time
from typing import Any

from elicitkit.elicitation.answers import parse_result
from elicitkit.elicitation.errors import (
    ElicitationError,
    ElicitationFailed,
    ElicitationTimeout,
    ElicitationUnsupported,
    InvalidAnswer,
    UrlElicitationRequired,
)
from elicitkit.elicitation.requests import FormRequest, UrlRequest
from elicitkit.elicitation.results import AcceptedElicitation, ElicitationResult
from elicitkit.elicitation.schema import Form
from elicitkit.protocol.errors import MCPError, RequestTimeout
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.protocol.modern import missing_capability
from elicitkit.protocol.versions import LATEST_LEGACY, MODERN_2026, supports_url_elicitation
from elicitkit.server import pages
from elicitkit.server.pages import AnswerOnPage, PageHost, caller_of, pages_of, question_key
from elicitkit.server.rounds import round as rounds
from elicitkit.server.rounds.round import InputRequired, InputRound
from elicitkit.server.scope import RequestScope
from elicitkit.server.tools import error_result

logger = logging.getLogger("elicitkit.elicitation")

DEFAULT_TIMEOUT = 600.0
"""Seconds a question waits for its answer by default: a person is answering, give them time."""


class TooManyQuestions(ElicitationError):
    """A request asked more questions than its server allows (``Server(max_questions=...)``).

    Every further question of the same request fails the same way, so a loop that keeps asking
    ends instead of asking a person forever.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        super().__init__(
            f"asked more than {cap} questions in one request; raise Server(max_questions=...) if that is intended"
        )


def _count(request: RequestScope, questions: int = 1) -> None:
    """Count questions against the server's cap (:class:`TooManyQuestions` past it)."""
    request.asked += questions
    cap = request.session.server.max_questions
    if request.asked > cap:
        raise TooManyQuestions(cap)


def _require_mode(request: RequestScope, mode: str) -> str:
    version = request.protocol_version or LATEST_LEGACY
    if mode not in request.elicitation_modes and request.modern:  # 2026: the request cannot proceed
        modes = ", ".join(sorted(request.elicitation_modes)) or "no elicitation at all"
        said = f"this request needs the client capability elicitation in {mode} mode (the client declared: {modes})"
        raise missing_capability({"elicitation": {mode: {}}}, said)
    if mode not in request.elicitation_modes:
        declared = sorted(request.elicitation_modes) or "no elicitation at all"
        raise ElicitationUnsupported(f"the client cannot be asked in {mode} mode (it declared: {declared})")
    if mode == "url" and not supports_url_elicitation(version):
        raise ElicitationUnsupported(f"URL elicitation needs protocol 2025-11-25; this client speaks {version}")
    return version


def _round(request: RequestScope) -> InputRound:
    """The 2026 route needs the request's input round; only tools, prompts and resources have one."""
    if request.round is None:
        raise ElicitationUnsupported(f"{request.request.method} cannot ask for input on a 2026-07-28 connection")
    return request.round


async def _ask_now_or_in_round(
    request: RequestScope, params: dict[str, Any], timeout: float | None, key: str | None
) -> Any:
    """The raw answer to one ``elicitation/create``: sent now on a handshake connection, or taken
    from (or added to) the 2026 round, which raises :class:`InputRequired` when it has none yet."""
    if request.modern:
        round_ = _round(request)
        return await rounds.ask(round_, "elicitation/create", params, key=key or round_.next_key())
    return await _send(request, params, timeout)


async def _send(request: RequestScope, params: dict[str, Any], timeout: float | None) -> Any:
    limit = DEFAULT_TIMEOUT if timeout is None else timeout
    try:
        return await request.send_request("elicitation/create", params, timeout=limit)
    except RequestTimeout:
        raise ElicitationTimeout(f"no answer within {limit:g}s; the question was withdrawn") from None
    except MCPError as exc:
        if exc.is_local:  # the connection went away: not the user's answer, let it through
            raise
        raise ElicitationFailed(exc) from None


async def ask_form(
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
) -> ElicitationResult[Any]:
    """Ask a form question; ``max_attempts`` > 1 re-asks with the reason when the answer does not fit.

    Handshake eras send ``elicitation/create`` now and wait; 2026 answers from the retry, or ends
    the round with the question (:mod:`elicitkit.server.rounds.round`). ``via="web"``: always on
    the server's own page (:mod:`elicitkit.server.pages`). ``fallback="page"`` (default: the
    server's :class:`~elicitkit.server.pages.PageOptions`): a client without form mode gets the
    page instead, and so does one that does not answer within ``deadline`` seconds (2025: the
    form is withdrawn; 2026: a retry past it without the answer, :func:`_ask_form_modern_by`).
    """
    if via is not None or fallback is not None or deadline is not None or pages.any_fallback:
        return await _ask_with_fallback(request, message, form, timeout, max_attempts, key, via, fallback, deadline)
    version = _require_mode(request, "form")
    schema = form.schema_for(version)
    if request.modern:
        _count(request)
        return await _ask_form_modern(request, message, form, schema, version, key)
    return await _ask_form_now(request, message, form, schema, version, timeout, max_attempts)


async def _ask_form_now(
    request: RequestScope,
    message: str,
    form: Form,
    schema: dict[str, Any],
    version: str,
    timeout: float | None,
    max_attempts: int,
) -> ElicitationResult[Any]:
    question = message
    limit = DEFAULT_TIMEOUT if timeout is None else timeout
    for attempt in range(1, max(1, max_attempts) + 1):
        _count(request)
        # _send(), inlined: one frame fewer for every question waiting on a person
        try:
            raw = await request.send_request(
                "elicitation/create", FormRequest(question, schema).to_params(version), timeout=limit
            )
        except RequestTimeout:
            raise ElicitationTimeout(f"no answer within {limit:g}s; the question was withdrawn") from None
        except MCPError as exc:
            if exc.is_local:  # the connection went away: not the user's answer, let it through
                raise
            raise ElicitationFailed(exc) from None
        try:
            return _typed(parse_result(raw, mode="form", schema=schema), form)
        except InvalidAnswer as exc:
            logger.info("answer %d/%d rejected: %s", attempt, max_attempts, exc.reason)
            if attempt >= max_attempts:
                raise
            question = _again(message, exc)
    raise AssertionError("unreachable")  # pragma: no cover


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
        return await _ask_on_page(request, message, form, timeout, key)
    version = _require_mode(request, "form")
    schema = form.schema_for(version)
    if fallback != "page" or deadline is None:
        if request.modern:
            _count(request)
            return await _ask_form_modern(request, message, form, schema, version, key)
        return await _ask_form_now(request, message, form, schema, version, timeout, max_attempts)
    host = pages_of(request.session.server)
    page_key = _page_key(request, host, message, form, key)
    answered = await host.take(page_key) if page_key is not None else None
    if answered is not None:  # answered on the page after an earlier call's deadline: this call continues
        return _typed(answered, form)
    if request.modern:
        _count(request)
        return await _ask_form_modern_by(request, message, form, schema, version, key, timeout, deadline)
    try:
        return await _ask_form_now(request, message, form, schema, version, deadline, max_attempts)
    except ElicitationTimeout:  # withdrawn (notifications/cancelled): the person gets the link instead
        logger.info("no answer within the %gs deadline; the question goes to a page", deadline)
        return await _ask_on_page(request, message, form, timeout, key, link_only=True)


async def _ask_form_modern_by(
    request: RequestScope,
    message: str,
    form: Form,
    schema: dict[str, Any],
    version: str,
    key: str | None,
    timeout: float | None,
    deadline: float,
) -> ElicitationResult[Any]:
    """2026 with a deadline: nothing can be withdrawn (the round already ended), so the deadline
    rides in the sealed state (when the form was first put to the client, wall clock) and is
    applied when the client comes back. A retry that brings the answer is served, however late
    (the person answered; nothing was withdrawn); a retry past the deadline without it gets the
    link result, as a 2025 call gets it once its form is withdrawn."""
    round_ = _round(request)
    round_key = key or round_.next_key()
    slot = "asked:" + round_key
    try:
        return await _ask_form_modern(request, message, form, schema, version, round_key)
    except InputRequired:
        asked = round_.app.get(slot)
        if not isinstance(asked, (int, float)):
            round_.app[slot] = time.time()
        elif round_key not in round_.responses and time.time() - asked > deadline:
            logger.info("no answer within the %gs deadline; the question goes to a page", deadline)
            return await _ask_on_page(request, message, form, timeout, key, link_only=True)
        raise


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
        if url_ok and request.round is not None:  # the round's sealed state, echoed by this caller only
            slot = f"page:{key or message}"
            known = request.round.app.get(slot)
            request.round.app[slot] = nonce = known if isinstance(known, str) else secrets.token_hex(16)
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
    if not url_ok:
        answered = await host.take(qkey, request)
        if answered is not None:
            return _typed(answered, form)
        _question, url = await host.open(qkey, message, schema, chain)
        await host.restore(chain, request)  # answers this call took wait for its next attempt, with this one
        raise AnswerOnPage(url, message, claim)
    question, url = await host.open(qkey, message, schema, owner=chain)
    _count(request)
    elicitation_id = hashlib.sha256(question.token.encode()).hexdigest()[:32]
    params = UrlRequest(message, url, elicitation_id).to_params(version)
    raw = await _ask_now_or_in_round(request, params, timeout, key)
    consent: ElicitationResult[None] = parse_result(raw, mode="url")
    if not consent.accepted:
        await host.withdraw(qkey)
        return consent
    answer = question.result if question.result is not None else await host.wait(question, timeout)
    if answer is None:
        await host.withdraw(qkey)
        raise ElicitationTimeout("no answer on the page in time; the page was withdrawn")
    if not request.modern:
        await host.take(qkey)
        with contextlib.suppress(Exception):  # the person is done; a gone client must not fail the answer
            await request.session.send_elicit_complete(elicitation_id, related=request.request_id)
    return _typed(answer, form)


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


async def _ask_form_modern(
    request: RequestScope, message: str, form: Form, schema: dict[str, Any], version: str, key: str | None
) -> ElicitationResult[Any]:
    round_ = _round(request)
    key = key or round_.next_key()
    params = FormRequest(message, schema).to_params(version)
    raw = round_.answer(key, "elicitation/create", params)
    if raw is None:
        round_.need(key, "elicitation/create", params)
        raise InputRequired(key)
    try:
        outcome = parse_result(raw, mode="form", schema=schema)
    except InvalidAnswer as exc:  # asked again in the next round, with the reason
        logger.info("input %r rejected, asking again: %s", key, exc.reason)
        round_.need(key, "elicitation/create", FormRequest(_again(message, exc), schema).to_params(version))
        raise InputRequired(key) from None
    round_.record(key, raw)
    return _typed(outcome, form)


async def ask_url(
    request: RequestScope, url_request: UrlRequest, *, timeout: float | None = None, key: str | None = None
) -> ElicitationResult[None]:
    """Ask the user to visit a URL; ``accept`` means they agreed to go, not that they finished."""
    version = _require_mode(request, "url")
    _count(request)
    params = url_request.to_params(version)
    raw = await _ask_now_or_in_round(request, params, timeout, key)
    result: ElicitationResult[None] = parse_result(raw, mode="url")
    return result


async def request_input(request: RequestScope, method: str, params: dict[str, Any], *, key: str | None = None) -> Any:
    """Any input request (sampling, roots, elicitation) on either era, raw result back."""
    capability = {"sampling/createMessage": "sampling", "roots/list": "roots", "elicitation/create": "elicitation"}
    needed = capability.get(method)
    if needed is not None and not request.client_supports(needed):
        if request.modern:
            raise missing_capability({needed: {}})
        raise ElicitationUnsupported(f"the client did not declare the {needed} capability")
    _count(request)
    if request.modern:
        return await rounds.ask(_round(request), method, params, key=key)
    return await request.send_request(method, params)


async def request_inputs(request: RequestScope, requests: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Several input requests at once: one round in 2026, one after another on a handshake."""
    if request.modern:
        _count(request, len(requests))
        return await rounds.ask_all(_round(request), requests)
    return {key: await request_input(request, method, params) for key, (method, params) in requests.items()}


def url_required(request: RequestScope, exc: UrlElicitationRequired) -> JSON:
    """A tool raised :class:`UrlElicitationRequired`: -32042 on 2025-11-25; on 2026 (which has
    no -32042) the URLs become this round's inputs; an ``isError`` result for a client that
    cannot open URLs at all; :class:`~elicitkit.server.pages.AnswerOnPage`: an ordinary result
    with the link to the server's own page."""
    if isinstance(exc, AnswerOnPage):
        return exc.result()
    if "url" not in request.elicitation_modes or not supports_url_elicitation(request.protocol_version):
        return error_result(f"{exc.message} (this client cannot open URL elicitations)")
    if request.round is not None:
        round_ = request.round
        for item in exc.elicitations:
            params = item.to_params(request.protocol_version or MODERN_2026)
            round_.need(getattr(item, "elicitation_id", None) or round_.next_key(), "elicitation/create", params)
        return round_.result()
    raise exc.to_mcp_error() from None
