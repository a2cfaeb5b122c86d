"""One request as the server serves it: the per-request scope, one kind per way of asking.

The two eras describe the client in different places: a handshake session (2025-11-25 and
before) learned it once, in ``initialize``; a 2026-07-28 request carries it in its envelope.
They also ask differently: a handshake request sends its question now, on the session's back
channel, and waits; a 2026 request adds it to its round and ends with an
``InputRequiredResult``; a task's run parks it in the task's record. Each of those is a kind
of scope here (:class:`_HandshakeScope`, :class:`_StatelessScope`, :class:`TaskScope`), and
each owns what differs: :meth:`RequestScope.ask` (and ``elicit``, ``ask_all``) and
:meth:`RequestScope.run` (turn the control signal into the round's result). Code above asks a
scope; it never reads which kind it has.

Low-level handlers receive the scope; :class:`~elicitkit.server.context.Context` (the public
face user functions see) stands on it.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from elicitkit.elicitation.errors import (
    ElicitationError,
    ElicitationFailed,
    ElicitationTimeout,
    ElicitationUnsupported,
    InvalidAnswer,
    UrlElicitationRequired,
)
from elicitkit.protocol.capabilities import declares, elicitation_modes
from elicitkit.protocol.errors import METHOD_NOT_FOUND, MCPError, RequestTimeout
from elicitkit.protocol.jsonrpc import JSON, RequestId
from elicitkit.protocol.modern import Envelope, missing_capability
from elicitkit.protocol.tasks import declares_tasks, missing_extension
from elicitkit.protocol.versions import LATEST_LEGACY, MODERN_2026, supports_url_elicitation
from elicitkit.runtime.peer import IncomingRequest
from elicitkit.server import signals
from elicitkit.server.rounds import round as rounds
from elicitkit.server.rounds.round import BecomeTask, InputRequired, InputRound, Round, only_asking
from elicitkit.server.rounds.sealing import StateCodec
from elicitkit.telemetry import hook as telemetry

if TYPE_CHECKING:
    from elicitkit.server.session import ServerSession
    from elicitkit.server.tasks.serving import TaskSupport
    from elicitkit.server.tools import Tool
    from elicitkit.telemetry.otel import OTel

__all__ = ["TASK_CLIENT_CAPABILITIES", "RequestScope", "RoundMaker", "TaskScope", "TooManyQuestions", "current_scope"]

logger = logging.getLogger("elicitkit.elicitation")

R = TypeVar("R")
ELICIT = "elicitation/create"

# What a task run tells the tool about its client: a task's questions are read through
# tasks/get and answered through tasks/update, so every kind of input request can be put.
TASK_CLIENT_CAPABILITIES: dict[str, Any] = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {},
    "roots": {},
}


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


class RoundMaker(Protocol):
    """What opening a 2026 round needs from the server: its state codec and principal hook."""

    @property
    def state_codec(self) -> StateCodec: ...

    @property
    def principal_hook(self) -> Callable[[RequestScope], str | None] | None: ...


Checked = Callable[[JSON], R]
"""Turns a raw answer into the result, or raises :class:`InvalidAnswer` (the answer does not fit)."""

Phrase = Callable[[InvalidAnswer | None], JSON]
"""The params of a question: as first put (None), or put again with the reason the answer failed."""

R_co = TypeVar("R_co", covariant=True)


class Question(Protocol[R_co]):
    """How a question is put (:data:`Phrase`) and its answer read (:data:`Checked`): one object,
    so a question waiting for a person holds it, not two bound methods."""

    def phrase(self, reason: InvalidAnswer | None) -> JSON: ...

    def check(self, raw: JSON) -> R_co: ...

    def fingerprint(self, method: str, params: JSON) -> str:
        """:func:`~elicitkit.server.rounds.sealing.fingerprint_question` of the question as
        ``params`` phrase it (a round pins its answer to it), made as cheaply as the question can."""
        ...


class RequestScope:
    """What a request handler gets: the request, its session, the client as this request sees it
    (``client``: a 2026 request's envelope, or the handshake's facts), and how it asks.

    Built only by :func:`legacy_scope`, :func:`modern_scope` or as a :class:`TaskScope`; the
    kinds differ in the methods they implement, never in a flag checked downstream of here.
    Kept small: a request parked on a person holds its scope for as long as it waits.
    """

    __slots__ = ("asked", "client", "request", "session")

    round: Round | None = None
    principal: str | None = None  # who the transport authenticated (HTTP, 2026), if anyone

    def __init__(self, request: IncomingRequest, session: ServerSession, client: Envelope) -> None:
        self.request = request
        self.session = session
        self.client = client
        self.asked = 0  # questions put so far (the server caps them per request)

    @property
    def params(self) -> dict[str, Any]:
        return self.request.params

    @property
    def request_id(self) -> RequestId:
        return self.request.id

    @property
    def public_request_id(self) -> RequestId:
        """The request's id as the client sent it (stateless HTTP renumbers requests inside its
        shared session, and keeps the client's id on the request's stream)."""
        streams = self.session.streams
        public = streams.public_id(self.request.id) if streams is not None else None
        return public if public is not None else self.request.id

    @property
    def protocol_version(self) -> str | None:
        return self.client.protocol_version or None  # None: no handshake has settled one

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.client.client_capabilities

    @property
    def client_info(self) -> dict[str, Any]:
        return self.client.client_info

    @property
    def elicitation_modes(self) -> frozenset[str]:
        return elicitation_modes(self.client.client_capabilities)

    def client_supports(self, capability: str) -> bool:
        """Whether the client declared ``capability`` (for this request on 2026, for the session before)."""
        return declares(self.client.client_capabilities, capability)

    def count(self, questions: int = 1) -> None:
        """Count questions against the server's cap (:class:`TooManyQuestions` past it)."""
        self.asked += questions
        cap = self.session.server.max_questions
        if self.asked > cap:
            raise TooManyQuestions(cap)

    # -- what differs by kind: asking -------------------------------------------------

    def lacks(self, capability: dict[str, Any], text: str, *, need: str | None = None) -> Exception:
        """The error for a question the client did not declare it can take (``text``: why, for people;
        ``need``: the same as the -32021 error's message, where the era answers with one)."""
        raise NotImplementedError

    def ask(self, method: str, params: JSON, *, key: str | None = None) -> Awaitable[JSON]:
        """The raw answer to one input request (sampling, roots, elicitation), no checks."""
        raise NotImplementedError

    def ask_all(self, requests: dict[str, tuple[str, JSON]]) -> Awaitable[dict[str, JSON]]:
        """Several input requests at once, raw answers by key."""
        raise NotImplementedError

    def elicit(self, params: JSON, *, timeout: float, key: str | None = None) -> Awaitable[JSON]:
        """The raw answer to one ``elicitation/create`` a person answers (``timeout``: how long they get)."""
        raise NotImplementedError

    def elicit_checked(
        self, question: Question[R], *, timeout: float, attempts: int, key: str | None = None
    ) -> Awaitable[R]:
        """A question whose answer ``check`` accepts; one that does not fit is asked again with
        the reason (up to ``attempts`` times where a person waits on the line). Counts the questions."""
        raise NotImplementedError

    def overdue(self, key: str, deadline: float) -> bool:
        """A question left open in an earlier round, unanswered for more than ``deadline`` seconds."""
        return False

    def sealed_nonce(self, slot: str) -> str | None:
        """A random value this round's sealed state carries back (only the caller holding it
        echoes it), kept under ``slot``; None where there is no sealed state."""
        return None

    def carried_nonce(self, slot: str) -> str | None:
        """The value under ``slot`` that this request's sealed state brought back (a retry), None
        on a first call or where there is no sealed state; unlike :meth:`sealed_nonce`, makes none."""
        return None

    async def url_finished(self, elicitation_id: str) -> bool:
        """A URL question's page was answered: tell the client where it is listening; True when
        this call took the answer for good (False: a retry comes back for it)."""
        raise NotImplementedError

    def url_inputs(self, exc: UrlElicitationRequired) -> JSON:
        """A tool raised :class:`UrlElicitationRequired` (the client can open URLs): the result."""
        raise NotImplementedError

    async def elicitation_completed(self, elicitation_id: str) -> None:
        """A URL question put on this request's behalf finished elsewhere (a gateway's backend
        said so): tell the client, where its era has the notice. A 2026 request or a task's run
        has none (the retry, or ``tasks/update``, brings the answer)."""
        return None

    # -- what differs by kind: running ------------------------------------------------

    def open_round(
        self, codec: StateCodec, principal: Callable[[RequestScope], str | None] | None = None
    ) -> Round | None:
        """2026: the round of a request that may ask (answers in, questions out); None elsewhere."""
        return None

    def run(self, body: Coroutine[Any, Any, JSON], server: RoundMaker) -> Awaitable[JSON]:
        """Run a body that may ask: its result, or the round's result when it stopped at questions."""
        raise NotImplementedError

    def serve_2026_only(self, method: str) -> None:
        """``method`` exists only on 2026-07-28 (listen, tasks): -32601 on a handshake."""
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def as_task(self, tasks: TaskSupport, tool: Tool, arguments: dict[str, Any]) -> Awaitable[JSON] | None:
        """The call as a task, where ``tool`` is a task tool and this request may make one; else None."""
        return None

    def become_task(self, tasks: TaskSupport) -> None:
        """``ctx.run_as_task()``: carry on as a task from here, where this call may become one."""
        return None

    def became_task(self) -> Round | None:
        """The round of a call that asked to carry on as a task (its answers go to the task)."""
        return None

    # -- talking back ---------------------------------------------------------------------

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        await self.request.report_progress(progress, total, message)

    def _log_threshold(self) -> str | None:
        return self.session.log_level

    async def log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        """A ``notifications/message`` on this request's stream, if the client's level lets it through.

        2026: only when this request asked for a level in ``_meta``; handshake: the session's level
        (which ``logging/setLevel`` may change while the request runs).
        """
        threshold = self._log_threshold()
        await self.session.log(level, data, logger_name, related=self.request.id, threshold=threshold)

    def send_request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Coroutine[Any, Any, JSON]:
        """A request to the client on behalf of this one (await it).

        A plain function handing back the peer's coroutine: a request parked on a person keeps
        every frame it waits in, and a pass-through frame here would be one more for nothing.
        """
        return self.session.send_request(method, params, timeout=timeout, related=self.request.id)

    def close_sse_stream(self, retry_ms: int = 1000) -> bool:
        """HTTP only: drop this request's SSE connection so the client polls back for the rest.

        Returns False where there is no such stream (stdio, in-memory, a JSON response).
        """
        streams = self.session.streams
        return streams is not None and streams.close_stream(self.request.id, retry_ms)


class _HandshakeScope(RequestScope):
    """A handshake-era request: questions are sent now, on the session's back channel."""

    __slots__ = ()

    @property
    def principal(self) -> str | None:  # type: ignore[override]
        """The session's principal: HTTP binds a legacy session to whoever opened it."""
        return self.session.principal

    def lacks(self, capability: dict[str, Any], text: str, *, need: str | None = None) -> Exception:
        return ElicitationUnsupported(text)

    def ask(self, method: str, params: JSON, *, key: str | None = None) -> Awaitable[JSON]:
        return self.send_request(method, params)  # a plain function: no frame of ours while the client answers

    async def ask_all(self, requests: dict[str, tuple[str, JSON]]) -> dict[str, JSON]:
        return {key: await self.send_request(method, params) for key, (method, params) in requests.items()}

    async def elicit(self, params: JSON, *, timeout: float, key: str | None = None) -> JSON:
        tel = telemetry.current
        if tel is not None:
            key = key or f"q{self.asked}"  # counted by the caller already
            put = signals.asked(tel, params, era=self.protocol_version, round_=1, key=key, origin="call")
        try:
            raw = await self.send_request(ELICIT, params, timeout=timeout)
        except RequestTimeout:
            if tel is not None:
                self._unanswered(tel, params, 1, key, put.started, "timeout")
            raise ElicitationTimeout(f"no answer within {timeout:g}s; the question was withdrawn") from None
        except MCPError as exc:
            if tel is not None:
                self._unanswered(tel, params, 1, key, put.started, "error")
            if exc.is_local:  # the connection went away: not the user's answer, let it through
                raise
            raise ElicitationFailed(exc) from None
        if tel is not None:
            signals.answered(
                tel, params, raw, era=self.protocol_version, round_=1, key=key, origin="call", since=put.started
            )
        return raw

    def elicit_checked(
        self, question: Question[R], *, timeout: float, attempts: int, key: str | None = None
    ) -> Coroutine[Any, Any, R]:
        # A plain function: the question waits in one lean frame (telemetry's, when on)
        if telemetry.current is not None:
            return self._elicit_traced(question, timeout, attempts, key)
        return self._elicit(question, timeout, attempts)

    async def _elicit(self, question: Question[R], timeout: float, attempts: int) -> R:
        """:meth:`_elicit_traced` without telemetry: few locals, as a question parked on a
        person keeps this frame for as long as it waits."""
        reason: InvalidAnswer | None = None
        attempt = 0
        while True:
            attempt += 1
            self.count()
            try:
                raw = await self.send_request(ELICIT, question.phrase(reason), timeout=timeout)
            except RequestTimeout:
                raise ElicitationTimeout(f"no answer within {timeout:g}s; the question was withdrawn") from None
            except MCPError as exc:
                if exc.is_local:  # the connection went away: not the user's answer, let it through
                    raise
                raise ElicitationFailed(exc) from None
            try:
                return question.check(raw)
            except InvalidAnswer as exc:
                logger.info("answer %d/%d rejected: %s", attempt, attempts, exc.reason)
                if attempt >= attempts:
                    raise
                reason = exc

    async def _elicit_traced(self, question: Question[R], timeout: float, attempts: int, key: str | None) -> R:
        reason: InvalidAnswer | None = None
        tel = telemetry.current
        if tel is not None:
            key = key or f"q{self.asked + 1}"  # named as a 2026 round would name it
        for attempt in range(1, max(1, attempts) + 1):
            self.count()
            params = question.phrase(reason)
            if tel is not None:  # the question's events: put now, answered in this same request
                put = signals.asked(tel, params, era=self.protocol_version, round_=attempt, key=key, origin="call")
            # elicit(), inlined: one frame fewer for every question waiting on a person
            try:
                raw = await self.send_request(ELICIT, params, timeout=timeout)
            except RequestTimeout:
                if tel is not None:
                    self._unanswered(tel, params, attempt, key, put.started, "timeout")
                raise ElicitationTimeout(f"no answer within {timeout:g}s; the question was withdrawn") from None
            except MCPError as exc:
                if tel is not None:
                    self._unanswered(tel, params, attempt, key, put.started, "error")
                if exc.is_local:  # the connection went away: not the user's answer, let it through
                    raise
                raise ElicitationFailed(exc) from None
            try:
                outcome = question.check(raw)
            except InvalidAnswer as exc:
                if tel is not None:
                    self._unanswered(tel, params, attempt, key, put.started, "invalid", raw)
                logger.info("answer %d/%d rejected: %s", attempt, attempts, exc.reason)
                if attempt >= attempts:
                    raise
                reason = exc
                continue
            if tel is not None:
                signals.answered(
                    tel,
                    params,
                    raw,
                    era=self.protocol_version,
                    round_=attempt,
                    key=key,
                    origin="call",
                    since=put.started,
                )
            return outcome
        raise AssertionError("unreachable")  # pragma: no cover

    def _unanswered(
        self, tel: OTel, params: JSON, attempt: int, key: str | None, since: float, why: str, raw: JSON | None = None
    ) -> None:
        signals.answered(
            tel, params, raw, era=self.protocol_version, round_=attempt, key=key, origin="call", since=since, action=why
        )

    async def url_finished(self, elicitation_id: str) -> bool:
        with contextlib.suppress(Exception):  # the person is done; a gone client must not fail the answer
            await self.session.send_elicit_complete(elicitation_id, related=self.request.id)
        return True

    def url_inputs(self, exc: UrlElicitationRequired) -> JSON:
        raise exc.to_mcp_error() from None

    async def elicitation_completed(self, elicitation_id: str) -> None:
        if not supports_url_elicitation(self.protocol_version or LATEST_LEGACY):
            return  # (2025-06-18 and before: no URL mode, so no notice; the question went as a form)
        with contextlib.suppress(Exception):  # a gone client must not fail the backend's notice
            await self.session.send_elicit_complete(elicitation_id, related=self.request.id)

    def run(self, body: Coroutine[Any, Any, JSON], server: RoundMaker) -> Awaitable[JSON]:
        # Nothing to turn into a result: the body itself, so no frame of ours waits around it.
        if telemetry.current is not None:
            return self._counted(body)
        return body

    async def _counted(self, body: Coroutine[Any, Any, JSON]) -> JSON:
        """The body, then how many questions the call asked (one request: one round)."""
        result = await body
        if telemetry.current is not None:
            signals.call_finished(telemetry.current, self.request.method, self.asked, 1)
        return result

    def serve_2026_only(self, method: str) -> None:
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")


class _StatelessScope(RequestScope):
    """A 2026-07-28 request: questions go into its round; the round's result ends the call."""

    __slots__ = ("principal", "round")

    def __init__(
        self, request: IncomingRequest, session: ServerSession, client: Envelope, principal: str | None = None
    ) -> None:
        # RequestScope.__init__'s fields set here, not through it: a 2026 request makes one of these.
        self.request = request
        self.session = session
        self.client = client
        self.asked = 0
        self.round: Round | None = None
        self.principal = principal

    def _round(self) -> Round:
        """Only tools, prompts and resources open a round; other methods cannot ask."""
        round_ = self.round
        if round_ is None:
            raise ElicitationUnsupported(f"{self.request.method} cannot ask for input on a 2026-07-28 connection")
        return round_

    def lacks(self, capability: dict[str, Any], text: str, *, need: str | None = None) -> Exception:
        return missing_capability(capability, need)  # 2026: the request cannot proceed

    # ask / ask_all / elicit: plain functions handing back the round's coroutine (one frame fewer per question)
    def ask(self, method: str, params: JSON, *, key: str | None = None) -> Awaitable[JSON]:
        return rounds.ask(self._round(), method, params, key=key)

    def ask_all(self, requests: dict[str, tuple[str, JSON]]) -> Awaitable[dict[str, JSON]]:
        return rounds.ask_all(self._round(), requests)

    def elicit(self, params: JSON, *, timeout: float, key: str | None = None) -> Awaitable[JSON]:
        tel = telemetry.current
        if tel is not None:
            return self._elicit_signalled(tel, params, key)
        return rounds.ask(self._round(), ELICIT, params, key=key)

    async def _elicit_signalled(self, tel: OTel, params: JSON, key: str | None) -> JSON:
        """``elicit`` with its events: what ``rounds.ask`` does, telling telemetry as it goes."""
        round_ = self._round()
        key = key or round_.next_key()
        found = round_.answer(key, ELICIT, params)
        if found is None:
            round_.need(key, ELICIT, params)
            self._signal(tel, round_, key, params, None)
            raise InputRequired(key)
        round_.record(key, found)
        if key in round_.responses:
            self._signal(tel, round_, key, params, found)
        return found

    async def elicit_checked(
        self, question: Question[R], *, timeout: float, attempts: int, key: str | None = None
    ) -> R:
        # each round is one attempt: the person answers again at their own pace (count(), inline)
        self.asked += 1
        if self.asked > self.session.server.max_questions:
            self.count(0)  # raises
        round_ = self.round
        if round_ is None:
            round_ = self._round()  # raises
        key = key or round_.next_key()
        params = question.phrase(None)
        raw = round_.answer(key, ELICIT, params, question.fingerprint(ELICIT, params))
        tel = telemetry.current
        if raw is None:
            round_.need(key, ELICIT, params)
            if tel is not None:
                self._signal(tel, round_, key, params, None)
            raise InputRequired(key)
        try:
            outcome = question.check(raw)
        except InvalidAnswer as exc:  # asked again in the next round, with the reason
            logger.info("input %r rejected, asking again: %s", key, exc.reason)
            again = question.phrase(exc)
            round_.need(key, ELICIT, again)
            if tel is not None:
                self._signal(tel, round_, key, params, raw, "invalid")
                self._signal(tel, round_, key, again, None)
            raise InputRequired(key) from None
        round_.record(key, raw)
        if tel is not None and key in round_.responses:  # fresh in this request (not replayed from the state)
            self._signal(tel, round_, key, params, raw)
        return outcome

    origin = "call"  # where a question comes from, on its events ("task" for a task's run)

    def _signal(
        self, tel: OTel, round_: Round, key: str, params: JSON, raw: JSON | None, action: str | None = None
    ) -> None:
        """A question put in this round (``raw`` None), or its answer taken from it."""
        number = signals.round_number(round_.previous.round if round_.previous is not None else None)
        era = self.protocol_version
        if raw is None and action is None:
            signals.asked(tel, params, era=era, round_=number, key=key, origin=self.origin, app=round_.app)
        else:
            signals.answered(
                tel, params, raw, era=era, round_=number, key=key, origin=self.origin, app=round_.app, action=action
            )

    def overdue(self, key: str, deadline: float) -> bool:
        """Nothing can be withdrawn on 2026 (the round already ended), so the deadline rides in
        the sealed state (when the question was first put, wall clock) and applies when the
        client comes back without the answer."""
        round_ = self._round()
        slot = "asked:" + key
        asked = round_.app.get(slot)
        if not isinstance(asked, (int, float)):
            round_.app[slot] = time.time()
            return False
        return key not in round_.responses and time.time() - asked > deadline

    def sealed_nonce(self, slot: str) -> str | None:
        round_ = self.round
        if round_ is None:
            return None
        known = round_.app.get(slot)
        round_.app[slot] = nonce = known if isinstance(known, str) else secrets.token_hex(16)
        return nonce

    def carried_nonce(self, slot: str) -> str | None:
        known = self.round.app.get(slot) if self.round is not None else None
        return known if isinstance(known, str) else None

    async def url_finished(self, elicitation_id: str) -> bool:
        return False  # the retry collects it (the answer waits on the page for this caller)

    def url_inputs(self, exc: UrlElicitationRequired) -> JSON:
        round_ = self.round
        if round_ is None:
            raise exc.to_mcp_error() from None
        for item in exc.elicitations:
            params = item.to_params(self.protocol_version or MODERN_2026)
            round_.need(getattr(item, "elicitation_id", None) or round_.next_key(), ELICIT, params)
        return round_.result()

    def open_round(
        self, codec: StateCodec, principal: Callable[[RequestScope], str | None] | None = None
    ) -> Round | None:
        """The one place a round is made: its sealed state is opened (and refused, -32602) here,
        bound to the principal this request acts for: the server's ``principal`` hook's answer,
        else the identity its transport authenticated (a state sealed for one principal does
        not open for another)."""
        who = principal(self) if principal is not None else self.principal
        self.round = InputRound(self.request.method, self.request.params, codec, who)
        return self.round

    def run(self, body: Coroutine[Any, Any, JSON], server: RoundMaker) -> Awaitable[JSON]:
        request, hook = self.request, server.principal_hook
        try:
            round_ = InputRound(
                request.method, request.params, server.state_codec, hook(self) if hook is not None else self.principal
            )
        except BaseException:
            body.close()  # never started: say so, rather than leave it to warn "never awaited"
            raise
        self.round = round_
        # plain, opening the round here: one frame around the body, not two
        return _settle(body, round_, self.request.method)

    def serve_2026_only(self, method: str) -> None:
        return None

    def as_task(self, tasks: TaskSupport, tool: Tool, arguments: dict[str, Any]) -> Awaitable[JSON] | None:
        options = tasks.options.get(tool.name)
        if options is None:
            return None
        if declares_tasks(self.client.client_capabilities):
            return tasks.call(tool, options, arguments, self)
        if options.mode == "required":
            raise missing_extension(f"tool {tool.name!r} runs only as a task; declare the tasks extension")
        return None

    def become_task(self, tasks: TaskSupport) -> None:
        round_ = self.round
        if not isinstance(round_, InputRound) or not declares_tasks(self.client.client_capabilities):
            return  # not a call that asks, or a client that cannot take a task
        name = self.params.get("name")
        options = tasks.options.get(name) if isinstance(name, str) else None
        if options is None or options.mode == "never" or not options.ask_before_task:
            return
        round_.to_task = True
        raise BecomeTask("run as a task")

    def became_task(self) -> Round | None:
        round_ = self.round
        return round_ if round_ is not None and round_.to_task else None

    def _log_threshold(self) -> str | None:
        return self.client.log_level


async def _settle(body: Coroutine[Any, Any, JSON], round_: Round, method: str) -> JSON:
    """The body's result, or the round's when the body stopped at questions."""
    if isinstance(round_, InputRound) and round_.unclaimed is not None:  # single-use rounds on a shared store
        try:
            await round_.claim()
        except BaseException:
            body.close()
            raise
    try:
        result = await body
    except BaseException as exc:
        if only_asking(exc):  # the questions end this round (never an error, never logged)
            if telemetry.current is not None:
                telemetry.current.call_round(_round_of(round_))
            return round_.result()
        raise
    if telemetry.current is not None:  # the call is done: its questions and rounds
        number = _round_of(round_)
        telemetry.current.call_round(number)
        signals.call_finished(telemetry.current, method, len(round_.used_answers()), number)
    return result


def _round_of(round_: Round) -> int:
    return signals.round_number(round_.previous.round if round_.previous is not None else None)


class TaskScope(_StatelessScope):
    """A 2026 scope without a live connection: questions are parked in the task's round (its
    record), nothing else goes anywhere (no progress, no log notifications, no requests sent now)."""

    __slots__ = ()

    origin = "task"

    def __init__(self, request: IncomingRequest, session: ServerSession, round_: Round) -> None:
        super().__init__(request, session, Envelope(MODERN_2026, TASK_CLIENT_CAPABILITIES, {}))
        self.round = round_

    def run(self, body: Coroutine[Any, Any, JSON], server: RoundMaker) -> Awaitable[JSON]:
        assert self.round is not None  # made with its round
        return _settle(body, self.round, self.request.method)

    def become_task(self, tasks: TaskSupport) -> None:
        return None  # already one

    def _signal(
        self, tel: OTel, round_: Round, key: str, params: JSON, raw: JSON | None, action: str | None = None
    ) -> None:
        """A task's answers are reported as they arrive (``tasks/update``, by the runner, which
        knows when the task began to wait); a run only reports the questions it puts."""
        if raw is None and action is None:
            signals.asked(tel, params, era=self.protocol_version, round_=1, key=key, origin=self.origin)

    def became_task(self) -> Round | None:
        return None

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None

    async def log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        return None

    def send_request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Coroutine[Any, Any, JSON]:
        return self.request.request(method, params, timeout=timeout)

    def close_sse_stream(self, retry_ms: int = 1000) -> bool:
        return False


def legacy_scope(request: IncomingRequest, session: ServerSession) -> RequestScope:
    """A handshake-era request: the client is who it said it was in ``initialize``."""
    return _HandshakeScope(request, session, session.client)


modern_scope: Callable[[IncomingRequest, ServerSession, Envelope, str | None], RequestScope] = _StatelessScope
"""A 2026-07-28 request: the client describes itself in this request's envelope (the class
itself: no call of ours around making it)."""


current_scope: contextvars.ContextVar[RequestScope | None] = contextvars.ContextVar("elicitkit_request", default=None)
"""The scope of the request being served in this task (set while a tool runs)."""
