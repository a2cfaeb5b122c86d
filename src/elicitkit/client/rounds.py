"""Continuing a call the server could not finish: 2026 ``input_required`` rounds and 2025 -32042.

A 2026 server that needs something from the client (an answer to a form, a sampled message,
the client's roots) does not ask with a request of its own: it finishes ``tools/call``,
``prompts/get`` or ``resources/read`` with an :class:`InputRequiredResult`. The client
gathers every requested input and sends the same request again, as a new request, carrying
``inputResponses`` and, untouched, the server's ``requestState``.

:class:`InputRequiredResult` keeps the method and the original params with the server's
requests, so it can be stored (``to_json``/``from_json``) and resumed by another process.
:func:`drive` is the one loop that does it; the :class:`~elicitkit.Client` only calls it.

The 2025-11-25 counterpart is -32042 (URL elicitation required): the tool call fails, the
client completes the URL elicitations and calls again (:func:`complete_url_elicitations`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from elicitkit._models import constructor
from elicitkit.errors import ElicitkitError
from elicitkit.protocol.modern import (
    MRTR_METHODS,
    RESERVED_PARAMS,
    RESULT_COMPLETE,
    RESULT_INPUT_REQUIRED,
)

if TYPE_CHECKING:
    from elicitkit.client.responder import ElicitationResponder, UrlElicitationRequiredError

InputRequiredHandling = Literal["handle", "return"]
MAX_BACKOFF = 2.0


class MultiRoundTripError(ElicitkitError):
    """A multi-round-trip exchange could not go on (raised locally; never a server's error)."""


class TooManyInputRounds(MultiRoundTripError):
    """The server kept asking for input past the client's ``max_input_rounds``."""


class InputRequestViolation(MultiRoundTripError):
    """The server asked for input the client never offered, or sent a malformed request for it."""


class InvalidResultType(MultiRoundTripError):
    """A result whose ``resultType`` is unknown, or ``input_required`` where it may not be."""


class InputRequest(BaseModel):
    """One entry of ``inputRequests``: a server-to-client request, embedded in a result."""

    model_config = ConfigDict(extra="allow")

    method: str
    params: dict[str, Any] = Field(default_factory=dict)


class InputRequiredResult(BaseModel):
    """The server needs these inputs before it can finish ``method`` with ``params``.

    ``params`` are the original request params (without ``_meta``, ``inputResponses`` or
    ``requestState``); ``request_state`` is the server's opaque string, to be echoed exactly.
    """

    model_config = ConfigDict(frozen=True)

    method: str
    params: dict[str, Any]
    input_requests: dict[str, InputRequest] = Field(default_factory=dict)
    request_state: str | None = None
    meta: dict[str, Any] | None = None

    @classmethod
    def from_wire(cls, method: str, params: dict[str, Any], result: dict[str, Any]) -> InputRequiredResult:
        raw_requests = result.get("inputRequests")
        if raw_requests is not None and not isinstance(raw_requests, dict):
            raise InputRequestViolation("inputRequests must be an object")
        requests: dict[str, InputRequest] = {}
        for key, entry in (raw_requests or {}).items():
            if not isinstance(entry, dict) or not isinstance(entry.get("method"), str):
                raise InputRequestViolation(f"inputRequests[{key!r}] is not a request (method and params)")
            entry_params = entry.get("params", {})
            if not isinstance(entry_params, dict):
                raise InputRequestViolation(f"inputRequests[{key!r}].params must be an object")
            # Checked above, field by field: built without validating again (extras dropped, as
            # the model's constructor drops everything but method and params it is given).
            requests[key] = _request({"method": entry["method"], "params": entry_params})
        state = result.get("requestState")
        if state is not None and not isinstance(state, str):
            raise InputRequestViolation("requestState must be a string")
        if raw_requests is None and state is None:
            raise InputRequestViolation("an input_required result needs inputRequests or requestState")
        meta = result.get("_meta")
        fields: dict[str, Any] = {
            "method": method,
            "params": original_params(params),
            "input_requests": requests,
            "request_state": state,
            "meta": meta if isinstance(meta, dict) else None,
        }
        if cls is InputRequiredResult and type(method) is str and type(params) is dict:
            return _result(fields)
        return cls(**fields)

    @property
    def name(self) -> str | None:
        """The tool or prompt asked for (``params.name``), if any."""
        value = self.params.get("name")
        return value if isinstance(value, str) else None

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, data: str | bytes) -> InputRequiredResult:
        return cls.model_validate_json(data)


_request = constructor(InputRequest, {"method": "elicitation/create", "params": {}})
_result = constructor(
    InputRequiredResult,
    {"method": "tools/call", "params": {}, "input_requests": {}, "request_state": None, "meta": None},
)


def original_params(params: dict[str, Any]) -> dict[str, Any]:
    """A request's params without the parts that belong to one round (envelope, responses, state)."""
    if RESERVED_PARAMS.isdisjoint(params):
        return dict(params)  # nothing to drop (a call's first round): a copy, without a loop
    return {k: v for k, v in params.items() if k not in RESERVED_PARAMS}


def result_type(result: dict[str, Any]) -> str:
    """``resultType`` of a result; absent means complete (results from older servers)."""
    kind = result.get("resultType", RESULT_COMPLETE)
    if kind not in (RESULT_COMPLETE, RESULT_INPUT_REQUIRED):
        raise InvalidResultType(f"unknown resultType {kind!r}")
    return str(kind)


def retry_params(
    params: dict[str, Any], input_responses: dict[str, Any] | None, request_state: str | None
) -> dict[str, Any]:
    """The params of the next round: the original ones plus this round's responses and the state."""
    out = original_params(params)
    if input_responses:
        out["inputResponses"] = input_responses
    if request_state is not None:
        out["requestState"] = request_state
    return out


SendRound = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
AnswerRound = Callable[[InputRequiredResult], Awaitable[dict[str, Any]]]


async def drive(
    send: SendRound,
    answer: AnswerRound,
    method: str,
    params: dict[str, Any],
    *,
    first: dict[str, Any],
    input_required: InputRequiredHandling = "handle",
    max_rounds: int = 10,
    backoff: float = 0.05,
    also_final: frozenset[str] = frozenset(),
) -> dict[str, Any] | InputRequiredResult:
    """Carry ``method`` on from its ``first`` result until it completes: each ``input_required``
    round is answered in full by ``answer`` and the request sent again through ``send`` (a new
    request) with the responses and the state, untouched. ``input_required="return"`` hands
    the first unanswered round back instead. The caller sends the first round itself, so a
    call that needs no input never enters this loop. ``also_final``: result types besides
    ``complete`` that end the call (a task-augmented call's ``task``); any other is refused.
    The one client loop: plain calls and the calls that may become tasks both run it."""
    if input_required not in ("handle", "return"):
        raise ValueError(f"input_required must be 'handle' or 'return', not {input_required!r}")
    result = first
    rounds = idle = 0
    while True:
        kind = result.get("resultType", RESULT_COMPLETE)
        if kind != RESULT_INPUT_REQUIRED:
            if kind == RESULT_COMPLETE or kind in also_final:
                return result
            raise InvalidResultType(f"unknown resultType {kind!r}")
        if method not in MRTR_METHODS:
            raise InvalidResultType(f"{method} may not answer input_required")
        pending = InputRequiredResult.from_wire(method, params, result)
        if input_required == "return":
            return pending
        rounds += 1
        if rounds > max_rounds:
            raise TooManyInputRounds(
                f"{method} still needs input after {max_rounds} rounds (max_input_rounds); giving up"
            )
        responses: dict[str, Any] | None
        if pending.input_requests:
            responses = await answer(pending)
            idle = 0
        else:  # state only: the server is working on something; do not hammer it
            responses = None
            await anyio.sleep(min(backoff * (2**idle), MAX_BACKOFF))
            idle += 1
        # pending.params are the original params already (without the round's own parts)
        retried = dict(pending.params)
        if responses:
            retried["inputResponses"] = responses
        if pending.request_state is not None:
            retried["requestState"] = pending.request_state
        result = await send(method, retried)


async def complete_url_elicitations(
    required: UrlElicitationRequiredError,
    seen: set[tuple[str, str]],
    elicitation: ElicitationResponder,
    timeout: float,
) -> None:
    """After -32042: have every URL elicitation accepted and completed, so the call can be retried.

    Raises ``required`` when there is nothing new to do (retrying would loop), when the person
    declines one, or when a completion notice does not come within ``timeout`` seconds.
    Each request carries the error's message as :attr:`~elicitkit.UrlRequest.reason`: the
    person reads why the server needs the page before being asked to open it.
    """
    keys = {(e.elicitation_id, e.url) for e in required.elicitations}
    if not keys or keys & seen or elicitation.callback is None:
        raise required
    seen |= keys
    reason = required.message or None  # said to the person before they consent (the handler shows it)
    required.elicitations = [replace(elicitation.with_completion(r), reason=reason) for r in required.elicitations]
    for request in required.elicitations:
        if (await elicitation.ask(request)).get("action") != "accept":
            raise required
    for request in required.elicitations:
        if not await elicitation.wait_complete(request.elicitation_id, timeout):
            raise required
