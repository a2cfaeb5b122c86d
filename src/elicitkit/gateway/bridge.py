"""One host request carried to a backend, and every question the backend asks carried back.

Each question the backend asks is put to the host through the host request's own scope
(:func:`put_to_host`: ``asking.ask_form`` / ``ask_url`` / ``request_input``, the same code a
tool's ``ctx.elicit`` runs). The era translation is those two sides meeting:

* a handshake host is asked now, over its session, and the backend call just waits: it runs
  in the host request's own task (:class:`InlineCall`, the hot path: no task, queue or
  hand-over of its own), its questions put to the host from the backend connection's handler;
* a 2026-07-28 host's request ends with the question (``InputRequired`` from its round), so
  the backend call runs in a task of its own (:class:`BackendCall`) to outlive the round, each
  question waiting in it for the host's answer; the call is *parked* under a random value the
  round's sealed ``requestState`` carries (``scope.sealed_nonce``), and the host's retry finds
  it again and answers the waiting question. Questions are keyed ``g1``, ``g2``... in the
  order the backend asked them, so a retry that finds no parked call (it expired, or went to
  another process) replays the backend from the top and is answered from the sealed state.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import orjson

from elicitkit.elicitation.errors import (
    ElicitationError,
    ElicitationTimeout,
    ElicitationUnsupported,
    SchemaError,
    UrlElicitationRequired,
)
from elicitkit.elicitation.requests import ElicitRequest, FormRequest, UrlRequest
from elicitkit.elicitation.results import AcceptedElicitation, CheckedAcceptance
from elicitkit.elicitation.schema import Form, form_from_schema
from elicitkit.gateway.fleet import HolderGone, RemoteCall
from elicitkit.protocol.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    URL_ELICITATION_REQUIRED,
    MCPError,
)
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.protocol.modern import ELICIT
from elicitkit.protocol.versions import LATEST_LEGACY, supports_url_elicitation
from elicitkit.server import asking
from elicitkit.server.rounds.round import only_asking
from elicitkit.server.scope import RequestScope

if TYPE_CHECKING:
    from elicitkit.gateway.backend import Backend, Lease
    from elicitkit.gateway.fleet import CallRelay

__all__ = ["BackendCall", "InlineCall", "Parked", "forward", "put_to_host"]

logger = logging.getLogger("elicitkit.gateway")

_ROOT_ANNOTATIONS = ("title", "description")
_SLOT = "gateway:call"  # where the round's sealed state keeps the parked call's nonce
_OPENED: JSON = {
    "type": "object",
    "properties": {"done": {"type": "boolean", "title": "I opened the page and finished there"}},
    "required": ["done"],
}


@dataclass(eq=False)
class Question:
    """One backend question, waiting for the host's answer (``key``: its name in a 2026 round)."""

    method: str
    params: JSON
    request: ElicitRequest | None
    answer: asyncio.Future[JSON] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    key: str | None = None


@dataclass(eq=False)
class Finished:
    """The backend call's end: its result, or the error it raised."""

    result: JSON | None = None
    error: BaseException | None = None


class BackendCall:
    """A request to a backend, in a task of its own, with the questions it asks on the way."""

    def __init__(self, backend: Backend, lease: Lease, method: str, params: JSON) -> None:
        self.backend = backend
        self.lease = lease
        self.method = method
        self.params = params
        self.scope: RequestScope | None = None  # the host request driving it now (progress, logs)
        self.asked = 0
        self.pending: Question | None = None  # put to the host, not answered yet
        self.events: asyncio.Queue[Question | Finished] = asyncio.Queue()
        self.finished = False
        self._cancel = anyio.CancelScope()
        lease.call = self

    async def run(self) -> None:
        """The backend request itself (started in the gateway's task group)."""
        end = Finished()
        try:
            with self._cancel:
                end.result = await self.backend.call(self.lease, self.method, self.params, self._progress)
            if end.result is None:
                end.error = MCPError(INTERNAL_ERROR, f"backend {self.backend.name!r}: the call was cancelled")
        except Exception as exc:
            end.error = exc
        finally:
            self.finished = True
            self.backend.release(self.lease)
            self._drop_questions()
            self.events.put_nowait(end)

    def cancel(self) -> None:
        """Stop the backend request (its peer sends ``notifications/cancelled``)."""
        self._cancel.cancel()
        self._drop_questions()

    def _drop_questions(self) -> None:
        for question in ([self.pending] if self.pending else []) + _queued(self.events):
            if not question.answer.done():
                question.answer.cancel()

    async def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        scope = self.scope
        if scope is not None:
            await scope.report_progress(progress, total, message)

    async def ask(self, method: str, params: JSON, request: ElicitRequest | None) -> JSON:
        """From the backend side: queue the question, wait for the host's answer."""
        question = Question(method, params, request)
        await self.events.put(question)
        return await question.answer

    async def next(self) -> Question | Finished:
        """The question the host still owes an answer, else the next event."""
        if self.pending is not None:
            return self.pending
        event = await self.events.get()
        if isinstance(event, Question):
            self.asked += 1
            event.key = f"g{self.asked}"
            self.pending = event
        return event

    def answered(self, question: Question, answer: JSON | BaseException) -> None:
        self.pending = None
        if question.answer.done():
            return
        if isinstance(answer, BaseException):
            question.answer.set_exception(answer)
        else:
            question.answer.set_result(answer)


class InlineCall:
    """A backend request run by the host request's own task, for hosts asked in place (every
    handshake era): nothing parks it, so it needs no task, queue or hand-over of its own; each
    question the backend asks is put to the host straight from the backend connection's handler.

    A question whose asking ends the host's call (the page link, -32042) stops the backend
    request (``abort``), as :class:`BackendCall` does; the host's call ending for any reason
    withdraws the questions still out (:meth:`close`)."""

    __slots__ = ("abort", "asked", "asking", "interrupted", "owner", "scope", "waiting")

    def __init__(self, scope: RequestScope) -> None:
        self.scope: RequestScope | None = scope
        self.asked = 0
        self.asking: set[asyncio.Task[Any]] = set()  # backend handlers putting a question to the host
        self.abort: BaseException | None = None
        self.owner = asyncio.current_task()  # the host request's task, running the backend request
        self.waiting = False  # the owner is in the backend request (only then is it interrupted)
        self.interrupted = False  # the owner was cancelled to stop it (a cancel scope cost as much again)

    async def ask(self, method: str, params: JSON, request: ElicitRequest | None) -> JSON | CheckedAcceptance:
        """From the backend side: put the question to the host now, answer with the host's answer."""
        scope = self.scope
        if scope is None or self.abort is not None:  # the host's call is over: nobody to put it to
            raise asyncio.CancelledError
        self.asked += 1
        question = Question.__new__(Question)  # no answer future: the answer is returned
        question.method, question.params, question.request, question.key = method, params, request, f"g{self.asked}"
        answer: JSON | CheckedAcceptance | BaseException
        task = asyncio.current_task()
        if task is not None:
            self.asking.add(task)
        try:
            try:
                answer = await ask_host(scope, question)
            except (ElicitationError, MCPError) as exc:
                answer = _refusal(question, exc)
        except Exception as exc:  # ends the host's call (the page link, -32042...): the backend's stops
            self.abort = exc
            owner = self.owner
            if owner is not None and task is not owner and self.waiting and not self.interrupted:
                self.interrupted = True
                owner.cancel()  # its backend request is cancelled (the backend told); see _forward_inline
            raise asyncio.CancelledError from None  # (in the owner itself, a 2026 round: it unwinds)
        finally:
            self.asking.discard(task)
        if isinstance(answer, BaseException):  # what the host would have said: the backend's error
            raise answer
        return answer

    def close(self) -> None:
        """The host's call is over: questions still out are withdrawn."""
        self.scope = None
        for task in tuple(self.asking):
            task.cancel()


async def _forward_inline(scope: RequestScope, backend: Backend, method: str, params: JSON) -> JSON:
    """:func:`forward` for a host asked in place: the backend request runs in this task."""
    lease = backend.lease_now(scope.principal) or await backend.lease(scope.principal)
    call = InlineCall(scope)
    lease.call = call
    result: JSON | None = None
    progress = scope.report_progress if scope.request.progress_token is not None else None
    try:
        call.waiting = True
        try:
            result = await backend.call(lease, method, params, progress)
        finally:
            call.waiting = False
    except asyncio.CancelledError:
        owner = call.owner
        if call.abort is None or owner is None:
            raise  # the host cancelled, or the gateway is stopping
        if call.interrupted:
            owner.uncancel()
        if owner.cancelling():
            raise  # cancelled from outside as well
    except UrlElicitationRequired as exc:  # a backend's -32042
        return asking.url_required(scope, exc)
    except MCPError as exc:
        if exc.code == URL_ELICITATION_REQUIRED:
            return asking.url_required(scope, UrlElicitationRequired.from_mcp_error(exc))
        raise
    finally:
        call.close()
        backend.release(lease)
    abort = call.abort
    if abort is not None:  # a question's asking ended the call (the page link, -32042, an error)
        if isinstance(abort, UrlElicitationRequired):
            return asking.url_required(scope, abort)
        if isinstance(abort, MCPError) and abort.code == URL_ELICITATION_REQUIRED:
            return asking.url_required(scope, UrlElicitationRequired.from_mcp_error(abort))
        raise abort
    if result is None:
        raise MCPError(INTERNAL_ERROR, f"backend {backend.name!r}: the call was cancelled")
    return result


def _queued(queue: asyncio.Queue[Question | Finished]) -> list[Question]:
    found: list[Question] = []
    while not queue.empty():
        item = queue.get_nowait()
        if isinstance(item, Question):
            found.append(item)
    return found


class Parked:
    """2026 host calls waiting for the host's retry, by the nonce their sealed state carries."""

    def __init__(self, ttl: float = 600.0) -> None:
        self.ttl = ttl
        self._calls: dict[str, tuple[BackendCall, object]] = {}  # nonce -> the call, this parking
        self.relay: CallRelay | None = None  # a fleet's: parkings shared with the other instances

    def __len__(self) -> int:
        return len(self._calls)

    def take(self, nonce: str) -> BackendCall | None:
        found = self._calls.pop(nonce, None)
        return found[0] if found is not None else None

    def park(self, nonce: str, call: BackendCall, tg: Any) -> None:
        parking = object()  # each parking its own timer: a call parked again starts a fresh wait
        self._calls[nonce] = (call, parking)
        tg.start_soon(self._expire, nonce, parking)

    async def _expire(self, nonce: str, parking: object) -> None:
        await anyio.sleep(self.ttl)
        found = self._calls.get(nonce)
        if found is not None and found[1] is parking:  # never came back for it since
            del self._calls[nonce]
            found[0].cancel()

    def cancel_all(self) -> None:
        for call, _parking in self._calls.values():
            call.cancel()
        self._calls.clear()


async def forward(
    scope: RequestScope, backend: Backend, method: str, params: JSON, parked: Parked, tg: Any, park: bool = True
) -> JSON:
    """Carry one host request to ``backend`` and the backend's questions to the host (run by
    ``scope.run``: on 2026 a question without an answer ends the host's round, the call parked;
    ``park=False``, a task's run: the call ends there, the next run replays it with the answers)."""
    carried = scope.carried_nonce(_SLOT) if park else None  # a retry's state names its parked call
    nonce = carried or (scope.sealed_nonce(_SLOT) if park else None)
    if nonce is None and park:  # nothing to park on: a host asked in place (or a request that cannot ask)
        return await _forward_inline(scope, backend, method, params)
    call: BackendCall | RemoteCall | None = parked.take(nonce) if nonce is not None else None
    if call is None and carried is not None and parked.relay is not None:
        holder = await parked.relay.holder(carried)  # held by another instance of the fleet?
        call = RemoteCall(parked.relay, holder, carried) if holder is not None else None
    try:
        if isinstance(call, RemoteCall):
            call.scope = scope
            return await _drive(scope, call)
    except HolderGone:
        call = None  # stopped, or no longer there: the backend call starts again, answered from the state
    if call is None:
        lease = await backend.lease(scope.principal)
        call = BackendCall(backend, lease, method, params)
        tg.start_soon(call.run)
    assert isinstance(call, BackendCall)
    call.scope = scope
    try:
        return await _drive(scope, call)
    except BaseException as exc:
        if nonce is not None and only_asking(exc) and not call.finished:
            call.scope = None
            if parked.relay is not None:
                try:
                    await parked.relay.register(nonce, parked, tg)
                except MCPError as refused:
                    call.cancel()
                    raise refused from None
            parked.park(nonce, call, tg)
        else:
            call.cancel()
        raise


async def _drive(scope: RequestScope, call: BackendCall | RemoteCall) -> JSON:
    """Put the call's questions to the host until it ends (its result) or the host's round ends
    (a 2026 host: the round's exception; the caller parks a local call)."""
    try:
        while True:
            event = await call.next()
            if isinstance(event, Finished):
                if event.error is not None:
                    raise event.error
                assert event.result is not None
                return event.result
            try:
                answer: JSON | BaseException = await put_to_host(scope, event)
            except (ElicitationError, MCPError) as exc:
                answer = _refusal(event, exc)
            call.answered(event, answer)
    except UrlElicitationRequired as exc:  # the host's page link, or a backend's -32042
        call.cancel()
        return asking.url_required(scope, exc)
    except MCPError as exc:
        call.cancel()
        if exc.code == URL_ELICITATION_REQUIRED:
            return asking.url_required(scope, UrlElicitationRequired.from_mcp_error(exc))
        raise
    except HolderGone:
        raise
    except BaseException as exc:
        if not only_asking(exc):
            call.cancel()
        raise


def _refusal(question: Question, exc: ElicitationError | MCPError) -> JSON | BaseException:
    """What the backend is told when the host cannot be asked: a form or URL question is declined
    (timed out: cancelled); sampling or roots the host lacks is an error, as the host would give."""
    if isinstance(exc, UrlElicitationRequired):
        raise exc  # the page link ends the host's call (forward turns it into the result)
    if isinstance(exc, MCPError) and (exc.code != MISSING_REQUIRED_CLIENT_CAPABILITY or question.method != ELICIT):
        raise exc  # a 2026 host without sampling or roots: -32021 is its answer, as from any server
    logger.info("the host could not take the backend's %s: %s", question.method, exc)
    if question.method == ELICIT:
        return {"action": "cancel" if isinstance(exc, ElicitationTimeout) else "decline"}
    if isinstance(exc, ElicitationUnsupported):  # what the host itself would have answered
        return MCPError(METHOD_NOT_FOUND, f"the host cannot take {question.method}: {exc}")
    return MCPError(INTERNAL_ERROR, f"{question.method}: {exc}")


async def put_to_host(scope: RequestScope, question: Question) -> JSON:
    """Ask the host ``question`` through the request's scope, the way a tool's own ``ctx`` asks:
    capability checks, the schema gated for the host's version, the page ladder, the era's way
    of asking (now, or in the round)."""
    answer = await ask_host(scope, question)
    return answer.to_wire() if isinstance(answer, CheckedAcceptance) else answer


async def ask_host(scope: RequestScope, question: Question) -> JSON | CheckedAcceptance:
    """:func:`put_to_host`, an accepted form kept as a :class:`CheckedAcceptance` when the host's
    answer was checked against the backend's own schema (not a down-converted one): the backend
    connection's responder then sends it on without judging the same content a second time."""
    request = question.request
    key = question.key
    if question.method != ELICIT or request is None:
        answer = await asking.request_input(scope, question.method, question.params, key=key)
        return answer if isinstance(answer, dict) else {}
    if isinstance(request, FormRequest):
        form = _form_of(request.requested_schema)
        result = await asking.ask_form(scope, request.message, form, key=key)
        if (
            type(result) is AcceptedElicitation
            and result.content is not None
            and form.schema_for(scope.protocol_version or LATEST_LEGACY) is form.schema
        ):  # checked against form.schema: the backend's requestedSchema less its root title/description
            return CheckedAcceptance(data=result.content, content=result.content, question=request)
        return result.to_wire()
    return await _put_url(scope, request, key)


_FORMS: OrderedDict[bytes, Form] = OrderedDict()  # a backend asks the same few forms again and again
_MAX_FORMS = 256


def _form_of(requested: JSON) -> Form:
    """The :class:`Form` of a backend's ``requestedSchema``, checked once per distinct schema (a
    form keeps its schema gated per host version, so a repeated question costs a lookup)."""
    key = orjson.dumps(requested, option=orjson.OPT_SORT_KEYS)
    form = _FORMS.get(key)
    if form is not None:
        _FORMS.move_to_end(key)
        return form
    schema = {k: v for k, v in requested.items() if k not in _ROOT_ANNOTATIONS}
    try:
        form = form_from_schema(schema)
    except SchemaError as exc:
        raise MCPError(INTERNAL_ERROR, f"the backend's form cannot be put to the host: {exc}") from None
    _FORMS[key] = form
    if len(_FORMS) > _MAX_FORMS:
        _FORMS.popitem(last=False)
    return form


async def _put_url(scope: RequestScope, request: UrlRequest, key: str | None) -> JSON:
    """A URL question: as one, to a host that takes URLs; as a form with the link to a host that
    takes forms only; else the link in the call's result (the gateway's page ladder's last rung)."""
    version = scope.protocol_version or LATEST_LEGACY
    modes = scope.elicitation_modes
    if "url" in modes and supports_url_elicitation(version):
        asked = UrlRequest(request.message, request.url, request.elicitation_id)
        return (await asking.ask_url(scope, asked, key=key)).to_wire()
    if "form" in modes:
        message = f"{request.message}\n\nOpen this page and finish there: {request.url}"
        answer = await asking.ask_form(scope, message, form_from_schema(_OPENED), key=key)
        content = answer.to_wire().get("content") or {}
        return {"action": "accept" if answer.accepted and content.get("done") else "decline"}
    from elicitkit.server.pages import AnswerOnPage

    raise AnswerOnPage(request.url, request.message)
