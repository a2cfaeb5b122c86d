"""One host request carried to a backend, and every question the backend asks carried back.

The backend call runs in a task of its own (:class:`BackendCall`) so it can outlive one
host round: each question it asks waits in the call while the host request's own scope puts
it to the host (:func:`put_to_host`: ``asking.ask_form`` / ``ask_url`` / ``request_input``,
the same code a tool's ``ctx.elicit`` runs). The era translation is those two sides meeting:

* a handshake host is asked now, over its session, and the backend call just waits;
* a 2026-07-28 host's request ends with the question (``InputRequired`` from its round); the
  call is *parked* under a random value the round's sealed ``requestState`` carries
  (``scope.sealed_nonce``), and the host's retry finds it again and answers the waiting
  question. Questions are keyed ``g1``, ``g2``... in the order the backend asked them, so a
  retry that finds no parked call (it expired, or went to another process) replays the
  backend from the top and is answered from the sealed state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from elicitkit.elicitation.errors import (
    ElicitationError,
    ElicitationTimeout,
    ElicitationUnsupported,
    SchemaError,
    UrlElicitationRequired,
)
from elicitkit.elicitation.requests import ElicitRequest, FormRequest, UrlRequest
from elicitkit.elicitation.schema import form_from_schema
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
from elicitkit.protocol.versions import LATEST_LEGACY, is_modern, supports_url_elicitation
from elicitkit.server import asking
from elicitkit.server.rounds.round import only_asking
from elicitkit.server.scope import RequestScope

if TYPE_CHECKING:
    from elicitkit.gateway.backend import Backend, Lease
    from elicitkit.gateway.fleet import CallRelay

__all__ = ["BackendCall", "Parked", "forward", "put_to_host"]

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


async def forward(scope: RequestScope, backend: Backend, method: str, params: JSON, parked: Parked, tg: Any) -> JSON:
    """Carry one host request to ``backend`` and the backend's questions to the host (run by
    ``scope.run``: on 2026 a question without an answer ends the host's round, the call parked)."""
    round_ = getattr(scope, "round", None)  # a retry carries the nonce in its state; a first call has none
    carried = round_ is not None and _SLOT in round_.app
    nonce = scope.sealed_nonce(_SLOT)
    call: BackendCall | RemoteCall | None = parked.take(nonce) if nonce is not None else None
    if call is None and carried and nonce is not None and parked.relay is not None:
        holder = await parked.relay.holder(nonce)  # held by another instance of the fleet?
        call = RemoteCall(parked.relay, holder, nonce) if holder is not None else None
    try:
        if isinstance(call, RemoteCall):
            call.scope = scope
            return await _drive(scope, call)
    except HolderGone:
        call = None  # stopped, or no longer there: the backend call starts again, answered from the state
    if call is None:
        lease = await backend.lease()
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
    request = question.request
    key = question.key
    if question.method != ELICIT or request is None:
        answer = await asking.request_input(scope, question.method, question.params, key=key)
        return answer if isinstance(answer, dict) else {}
    if isinstance(request, FormRequest):
        schema = {k: v for k, v in request.requested_schema.items() if k not in _ROOT_ANNOTATIONS}
        try:
            form = form_from_schema(schema)
        except SchemaError as exc:
            raise MCPError(INTERNAL_ERROR, f"the backend's form cannot be put to the host: {exc}") from None
        return (await asking.ask_form(scope, request.message, form, key=key)).to_wire()
    return await _put_url(scope, request, key)


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


async def send_complete(scope: RequestScope | None, elicitation_id: str) -> None:
    """A backend's completion notice, to a host that has them (2025-11-25)."""
    if scope is None:
        return
    version = scope.protocol_version or LATEST_LEGACY
    if is_modern(version) or not supports_url_elicitation(version):
        return
    with contextlib.suppress(Exception):
        await scope.session.send_elicit_complete(elicitation_id, related=scope.request_id)
