"""Answering the server: its requests (2025 eras) and the input requests of its results (2026).

Both eras end in the same callbacks: a legacy server sends ``elicitation/create``,
``sampling/createMessage`` or ``roots/list`` as requests of its own (:meth:`Responder.on_request`);
a 2026 server lists the same requests in an ``input_required`` result
(:meth:`Responder.answer_round`). Elicitation is the heart of it. A server's question is
parsed through the shared schema gate into a :class:`~elicitkit.elicitation.requests.FormRequest` or
:class:`~elicitkit.elicitation.requests.UrlRequest` (with the :class:`Origin` asking), handed
to the callback, and the callback's answer is validated, with schema defaults filled in, by
the same code the server uses before anything goes back on the wire.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager as ContextManager
from dataclasses import replace
from typing import Any, Protocol

import anyio

from elicitkit.client.rounds import (
    InputRequest,
    InputRequestViolation,
    InputRequiredResult,
    MultiRoundTripError,
)
from elicitkit.elicitation.answers import parse_result
from elicitkit.elicitation.errors import ElicitationError, InvalidAnswer, UrlElicitationRequired
from elicitkit.elicitation.requests import ElicitRequest, FormRequest, InvalidRequest, Origin, UrlRequest, parse_request
from elicitkit.elicitation.results import CheckedAcceptance, ElicitationResult
from elicitkit.protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    ConnectionClosed,
    MCPError,
)
from elicitkit.protocol.modern import ELICIT, INPUT_METHODS, LIST_ROOTS, SAMPLE
from elicitkit.protocol.versions import (
    declares_elicitation_modes,
    has_roots_list_changed,
    refuses_questions_with_errors,
)
from elicitkit.runtime.peer import IncomingRequest

# The logger keeps its historical name: users filter on it.
logger = logging.getLogger("elicitkit.client.elicitation")

JSON = dict[str, Any]
ElicitationCallback = Callable[[ElicitRequest], Awaitable[ElicitationResult[Any] | dict[str, Any]]]
SamplingCallback = Callable[[JSON], Awaitable[JSON]]
RootsCallback = Callable[[], Awaitable[list[JSON]]]


UrlElicitationRequiredError = UrlElicitationRequired
"""The name this client used before the two sides shared one class (see :mod:`elicitkit.compat`)."""


class QuestionRefused(ElicitationError):
    """Raise from a handler to refuse a question outright, telling the server why.

    On a 2025 connection the server gets a JSON-RPC error (-32602) with ``message`` and
    ``data``; a 2026 input request has no error channel, so the answer becomes a decline and
    the reason is logged here.
    """

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


def to_wire_answer(answer: Any) -> dict[str, Any]:
    if isinstance(answer, ElicitationResult):
        return answer.to_wire()
    if isinstance(answer, dict):
        return {k: v for k, v in answer.items() if k in ("action", "content", "_meta")}
    raise TypeError(f"an elicitation callback must return an ElicitationResult or a dict, not {type(answer).__name__}")


class ElicitationResponder:
    """Serves ``elicitation/create`` for a client and tracks ``notifications/elicitation/complete``."""

    def __init__(self, callback: ElicitationCallback | None, modes: tuple[str, ...]) -> None:
        self.callback = callback
        self.modes = modes
        self._completed: OrderedDict[str, None] = OrderedDict()
        self._waiting: dict[str, anyio.Event] = {}

    def capability(self, version: str) -> dict[str, Any] | None:
        if self.callback is None:
            return None
        if not declares_elicitation_modes(version):
            return {}
        return {mode: {} for mode in self.modes}

    async def answer(self, params: dict[str, Any], *, version: str, origin: Origin) -> dict[str, Any]:
        """Handle one ``elicitation/create``: parse, ask the callback, check, return the wire result."""
        if self.callback is None:
            raise MCPError(INVALID_PARAMS, "this client did not declare the elicitation capability")
        try:
            request = parse_request(params, version=version, origin=origin)
        except InvalidRequest as exc:
            raise MCPError(INVALID_PARAMS, f"invalid elicitation request: {exc}") from None
        # The mode's string without the enum's value descriptor (read twice per question).
        mode = "form" if isinstance(request, FormRequest) else request.mode.value
        declared = self.modes if declares_elicitation_modes(version) else ("form",)
        if mode not in declared:
            raise MCPError(INVALID_PARAMS, f"elicitation mode {mode!r} was not declared by this client")
        if isinstance(request, UrlRequest):
            request = self.with_completion(request)
        try:
            outcome = self.callback(request)
            answer = await outcome if inspect.isawaitable(outcome) else outcome
        except QuestionRefused as exc:
            if refuses_questions_with_errors(version):
                raise MCPError(INVALID_PARAMS, exc.message, exc.data) from None
            logger.warning("refused an input request (sent as a decline): %s", exc.message)
            return {"action": "decline"}
        if isinstance(answer, CheckedAcceptance) and answer.question is request:
            return answer.to_wire()  # checked against this very question's schema in this process
        wire = to_wire_answer(answer)
        schema = request.requested_schema if isinstance(request, FormRequest) else None
        try:
            checked = parse_result(wire, mode=mode, schema=schema)
        except InvalidAnswer as exc:
            logger.error("the elicitation callback gave an answer that does not fit the question: %s", exc)
            raise MCPError(INTERNAL_ERROR, f"the client could not produce a valid answer: {exc.reason}") from exc
        return checked.to_wire()

    async def ask(self, request: ElicitRequest) -> dict[str, Any]:
        """The callback's answer to an already parsed ``request``, in wire form (unchecked: -32042 URLs)."""
        if self.callback is None:
            raise MCPError(INVALID_PARAMS, "this client did not declare the elicitation capability")
        outcome = self.callback(request)
        return to_wire_answer(await outcome if inspect.isawaitable(outcome) else outcome)

    # -- completion notifications ---------------------------------------------------------

    def with_completion(self, request: UrlRequest) -> UrlRequest:
        """``request`` able to wait for its completion notice (only a 2025-11-25 id has one)."""
        if not request.elicitation_id:
            return request
        return replace(request, completion=functools.partial(self.wait_complete, request.elicitation_id))

    def completed(self, elicitation_id: str) -> None:
        if elicitation_id in self._completed:
            return  # already seen: ignore, as the spec asks
        self._completed[elicitation_id] = None
        if len(self._completed) > 4096:
            self._completed.popitem(last=False)
        event = self._waiting.pop(elicitation_id, None)
        if event is not None:
            event.set()

    def is_complete(self, elicitation_id: str) -> bool:
        return elicitation_id in self._completed

    async def wait_complete(self, elicitation_id: str, timeout: float | None = None) -> bool:
        """Wait for the server's completion notice; False when ``timeout`` runs out first."""
        if elicitation_id in self._completed:
            return True
        event = self._waiting.setdefault(elicitation_id, anyio.Event())
        with anyio.move_on_after(timeout if timeout is not None else float("inf")):
            await event.wait()
            return True
        return False


class Asked(Protocol):
    """What the responder needs to know about the connection a server request came in on."""

    @property
    def origin(self) -> Origin: ...

    @property
    def asked_version(self) -> str:
        """The version a server's own requests are read in (the handshake's)."""
        ...

    def timeouts_paused(self) -> ContextManager[None]:
        """Our own requests' timeouts stand still while a person answers."""
        ...


class Responder:
    """Everything this client answers, whichever era asks: the callbacks and the capabilities they imply."""

    def __init__(
        self,
        elicitation: ElicitationResponder,
        sampling: SamplingCallback | None = None,
        roots: Sequence[JSON] | RootsCallback | None = None,
    ) -> None:
        self.elicitation = elicitation
        self.sampling = sampling
        self.roots = roots
        self.asked: Asked | None = None  # set by the client that owns this responder

    def capabilities(self, version: str) -> JSON:
        """What this client declares for ``version`` (2026 has no ``roots.listChanged``: that notification is gone)."""
        caps: JSON = {}
        elicitation = self.elicitation.capability(version)
        if elicitation is not None:
            caps["elicitation"] = elicitation
        if self.sampling is not None:
            caps["sampling"] = {}
        if self.roots is not None:
            caps["roots"] = {"listChanged": True} if has_roots_list_changed(version) else {}
        return caps

    async def list_roots(self) -> JSON:
        roots = await self.roots() if callable(self.roots) else list(self.roots or [])
        return {"roots": roots}

    # -- 2025 eras: the server's own requests ----------------------------------------------

    async def on_request(self, request: IncomingRequest) -> JSON:
        """Answer one server-to-client request (the peer calls this directly: it is on the hot path)."""
        method = request.method
        if method == ELICIT:
            if self.elicitation.callback is None or self.asked is None:
                raise MCPError(METHOD_NOT_FOUND, "this client does not support elicitation")
            asked = self.asked
            with asked.timeouts_paused():
                return await self.elicitation.answer(request.params, version=asked.asked_version, origin=asked.origin)
        if method == "ping":
            return {}
        if method == SAMPLE:
            if self.sampling is None:
                raise MCPError(METHOD_NOT_FOUND, "this client does not support sampling")
            return await self.sampling(request.params)
        if method == LIST_ROOTS:
            if self.roots is None:
                raise MCPError(METHOD_NOT_FOUND, "this client does not expose roots")
            return await self.list_roots()
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")

    # -- 2026: the input requests of an input_required result -------------------------------

    async def answer_round(self, pending: InputRequiredResult, *, version: str, origin: Origin) -> JSON:
        """Answer every input request of ``pending``; all are checked before anyone is asked.

        A request for a capability this client never declared is a protocol violation
        (:class:`InputRequestViolation`), not a question.
        """
        for key, item in pending.input_requests.items():
            self._check(key, item)
        answers: JSON = {}
        for key, item in pending.input_requests.items():
            answers[key] = await self._answer(key, item, version=version, origin=origin)
        return answers

    def _check(self, key: str, item: InputRequest) -> None:
        if item.method not in INPUT_METHODS:
            raise InputRequestViolation(f"input request {key!r}: unknown method {item.method!r}")
        if item.method == ELICIT:
            if self.elicitation.callback is None:
                raise InputRequestViolation(f"input request {key!r}: elicitation, which this client did not declare")
            mode = item.params.get("mode", "form")
            if mode not in self.elicitation.modes:
                raise InputRequestViolation(f"input request {key!r}: elicitation mode {mode!r} was not declared")
        elif item.method == SAMPLE:
            if self.sampling is None:
                raise InputRequestViolation(f"input request {key!r}: sampling, which this client did not declare")
        elif self.roots is None:
            raise InputRequestViolation(f"input request {key!r}: roots, which this client did not declare")

    async def _answer(self, key: str, item: InputRequest, *, version: str, origin: Origin) -> JSON:
        if item.method == ELICIT:
            try:
                return await self.elicitation.answer(item.params, version=version, origin=origin)
            except MCPError as exc:
                if exc.code == INVALID_PARAMS:
                    raise InputRequestViolation(f"input request {key!r}: {exc.message}") from None
                if isinstance(exc, ConnectionClosed):  # the connection is gone, not a broken round: say that
                    raise
                raise MultiRoundTripError(f"input request {key!r}: {exc.message}") from exc
        if item.method == SAMPLE:
            assert self.sampling is not None
            return await self.sampling(item.params)
        return await self.list_roots()
