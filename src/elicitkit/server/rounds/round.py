"""Asking on a 2026-07-28 connection: multi-round-trip with deterministic replay.

There is no back channel, so a question cannot be sent mid-call. Instead the handler runs
until it needs an answer it does not have; the call then ends with an ``InputRequiredResult``
(the open questions, keyed, plus a sealed ``requestState``) and the client retries the same
call with ``inputResponses``. On the retry the handler runs again from the top, and every
question it asks is answered from the retry (or from answers recorded in the sealed state)
until it either finishes or needs more.

The contract for tool authors (also in docs/modern.md): the code before each question must be
safe to run again, and must ask the same questions in the same order for the same arguments
and answers. Each recorded answer is pinned to a fingerprint of the question it answered; if
a re-run asks something different under the same key, the old answer is not reused and the
question goes out again. Keys default to ``q1``, ``q2``... in asking order; name them
(``key=``) when the order can vary.
"""

from __future__ import annotations

import logging
from typing import Any, NoReturn

from elicitkit.protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, MCPError
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.server.rounds.sealing import (
    AeadStateCodec,
    InvalidRequestState,
    SealedState,
    SpentStore,
    StateBinding,
    StateCodec,
    construct_state,
    fingerprint_question,
)

logger = logging.getLogger("elicitkit.mrtr")  # the name operators filter on; kept


class InputRequired(BaseException):
    """The handler needs answers it does not have yet; the round ends with an InputRequiredResult.

    A :class:`BaseException`, like :class:`asyncio.CancelledError` and :class:`GeneratorExit`,
    because it is control flow, not a failure: it must unwind the tool body to the framework,
    which ends the round and runs the body again once the answers come. As an ``Exception`` a
    tool guarding its question with ``try: ... except Exception:`` would swallow it and answer
    with its except branch on 2026-07-28, while the same tool gets the user's answer on a
    handshake connection. ``finally`` blocks and context managers still run on the way out;
    only a bare ``except:`` or ``except BaseException:`` can catch it (and must re-raise).
    A task group raising it from several children raises a group of them: see :func:`only_asking`.
    """


def only_asking(exc: BaseException) -> bool:
    """The signal itself, or an exception group (a task group's) made of nothing but it."""
    if isinstance(exc, InputRequired):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(InputRequired)[1] is None
    return False


class BecomeTask(InputRequired):
    """Raised by ``ctx.run_as_task()`` in a live call: the questions so far are answered, carry
    on as a task. Control flow like :class:`InputRequired` (which it is, so it unwinds the same
    way); the ``tools/call`` branch turns the round into a task."""


class Round:
    """What every round has: the questions this run asked, the answers it used, the ones still
    open. :class:`InputRound` (a live 2026 request, sealed state) and a task's round (answers from
    its record) say where answers come from and what the round's result is."""

    previous: SealedState | None = None

    def __init__(self, responses: dict[str, Any]) -> None:
        self.responses = responses
        self.pending: dict[str, JSON] = {}
        self._asked: dict[str, str] = {}  # key -> fingerprint, for every question this run asked
        self._answers: dict[str, JSON] = {}  # key -> answer, recorded or received, that was used
        self._counter = 0
        self.to_task = False  # the body asked to carry on as a task (Tasks extension)
        self.app: dict[str, Any] = {}  # server-side facts carried to the next round

    def next_key(self) -> str:
        self._counter += 1
        return f"q{self._counter}"

    def answer(self, key: str, method: str, params: JSON, fingerprint: str | None = None) -> JSON | None:
        """The answer to this question if the round has one, else None (``fingerprint``: the
        question's :func:`fingerprint_question`, when the caller made it already)."""
        raise NotImplementedError

    def record(self, key: str, answer: JSON) -> None:
        self._answers[key] = answer

    def need(self, key: str, method: str, params: JSON) -> None:
        self.pending[key] = {"method": method, "params": params}

    def used_answers(self) -> dict[str, tuple[JSON, str]]:
        """Every answer this run used, with the fingerprint of the question it answered."""
        return {key: (answer, self._asked[key]) for key, answer in self._answers.items() if key in self._asked}

    def asked_fingerprint(self, key: str) -> str | None:
        """The fingerprint of the question asked under ``key`` in this run, if one was."""
        return self._asked.get(key)

    def result(self) -> JSON:
        """What the caller gets when the run stopped at questions."""
        raise NotImplementedError


class InputRound(Round):
    """One 2026 request's inputs: answers on hand, questions still open, the state to seal.

    ``unclaimed``: the opened state, when the codec's single-use store is a shared one that must
    be awaited (a fleet's); the handler may run only after :meth:`claim`. Class attributes, so
    the default path (no state, or an in-process store) sets nothing.
    """

    unclaimed: SealedState | None = None
    _spent_later: SpentStore | None = None
    _diverged = False  # this run took an answer that replaced a recorded one

    def __init__(self, method: str, params: JSON, codec: StateCodec, principal: str | None = None) -> None:
        self.codec = codec
        self.binding = StateBinding.for_request(method, params, principal)
        token = params.get("requestState")
        previous = self._open(token) if token is not None else None
        responses = params.get("inputResponses")
        # Round.__init__'s fields, set here rather than through it (every 2026 call makes a round).
        self.responses = {} if responses is None else self._responses(responses)
        self.pending = {}
        self._asked = {}
        self._answers = {}
        self._counter = 0
        self.to_task = False
        self.app = {}
        if previous is not None:
            self.previous = previous
            # Server-side facts carried sealed to the next round (a server page's id, for one).
            if isinstance(previous.app, dict):
                self.app.update(previous.app)

    def _open(self, token: Any) -> SealedState:
        try:
            state = self.codec.open(token, self.binding)
        except InvalidRequestState as exc:
            self._refused(exc)
        later: SpentStore | None = getattr(self.codec, "spent_later", None)
        if later is not None:  # a fleet's single-use store: claimed (awaited) before the handler runs
            self.unclaimed, self._spent_later = state, later
        return state

    def _refused(self, exc: InvalidRequestState) -> NoReturn:
        logger.warning("rejected requestState for %s %s: %s", self.binding.method, self.binding.target, exc.reason)
        raise exc.to_mcp_error() from None

    async def claim(self) -> None:
        """Spend the opened state in the codec's shared single-use store (-32602 if it was spent).

        Only needed while ``unclaimed`` is set; callers check that first, so the default path
        never awaits. A store that cannot be reached raises its own clean error.
        """
        state, later = self.unclaimed, self._spent_later
        if state is None or later is None:
            return
        self.unclaimed = None
        if not await later.claim(state.nonce, state.exp):
            self._refused(InvalidRequestState("already used (single-use rounds, shared store)"))

    @staticmethod
    def _responses(raw: Any) -> dict[str, Any]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise MCPError(INVALID_PARAMS, "inputResponses must be an object keyed by input request")
        return raw

    def answer(self, key: str, method: str, params: JSON, fingerprint: str | None = None) -> JSON | None:
        """The answer to this question if the retry (or the sealed state) has one, else None."""
        if fingerprint is None:
            fingerprint = fingerprint_question({"method": method, "params": params})
        self._asked[key] = fingerprint
        if key in self.responses:
            self._check_replayed(key, fingerprint)
            response = self.responses[key]
            if self.previous is not None and self.previous.answers.get(key, response) != response:
                self._diverged = True  # an answer replaced: the questions after it may differ now
            if not isinstance(response, dict):
                raise MCPError(INVALID_PARAMS, f"inputResponses[{key!r}] must be an object")
            if method == "elicitation/create" and response.get("action") not in ("accept", "decline", "cancel"):
                raise MCPError(INVALID_PARAMS, f"inputResponses[{key!r}]: unknown action {response.get('action')!r}")
            return response
        previous = self.previous
        if previous is not None and key in previous.answers and previous.questions.get(key) == fingerprint:
            recorded: JSON = previous.answers[key]  # (SealedState.answer_matches, fingerprinted once)
            return recorded
        return None

    def _check_replayed(self, key: str, fingerprint: str) -> None:
        """The retry answers ``key``: the question this run asks under it must be the one answered.

        It was asked in the previous round (its fingerprint is in the sealed state); a run that
        asks something else under the same key broke the replay contract, and taking the answer
        would answer the wrong question, while asking again would only loop (the client answers,
        the next run asks yet another text) until the client gives up after its rounds, with an
        error that does not point here. Once the retry replaced an earlier answer, the run's
        inputs differ from the last round's and a later question may rightly read differently.
        """
        previous = self.previous
        answered = previous.questions.get(key) if previous is not None else None
        if answered is None or answered == fingerprint or self._diverged:
            return
        logger.warning(
            "replay contract broken: %s asked a different question under %r on a retry", self.binding.target, key
        )
        raise MCPError(
            INTERNAL_ERROR,
            f"the tool asked a different question under {key!r} on this retry than the one the answer is for:"
            " a 2026-07-28 call runs again from the top on each retry (maybe on another server instance) and"
            " must ask the same questions for the same arguments and answers (the replay contract); a question"
            " whose text changes per run (a process id, a time, a random value) breaks it",
            {"replayMismatch": key},
        )

    def result(self) -> JSON:
        """The ``InputRequiredResult`` for the questions still open, with the state to echo."""
        round_no = (self.previous.round if self.previous is not None else 0) + 1
        questions, answers = dict(self._asked), dict(self._answers)
        codec = self.codec
        if type(codec) is AeadStateCodec and answers.keys() <= questions.keys():
            # The default codec, and what the model's validator checks holds: no model built.
            token = codec.seal_values(round_no, questions, answers, self.app or None, self.binding)
        else:
            if answers.keys() <= questions.keys():
                state = construct_state(round_no, questions, answers, self.app or None)
            else:  # the model's validator says why
                state = SealedState(round=round_no, questions=questions, answers=answers, app=self.app or None)
            token = codec.seal(state, self.binding)
        return {"resultType": "input_required", "inputRequests": dict(self.pending), "requestState": token}


async def ask(round_: Round, method: str, params: JSON, *, key: str | None = None) -> JSON:
    """The answer to one input request, or :class:`InputRequired` after noting the question."""
    key = key or round_.next_key()
    found = round_.answer(key, method, params)
    if found is None:
        round_.need(key, method, params)
        raise InputRequired(key)
    round_.record(key, found)
    return found


async def ask_all(round_: Round, requests: dict[str, tuple[str, JSON]]) -> dict[str, JSON]:
    """Several input requests at once: every missing one goes into the same round."""
    answers: dict[str, JSON] = {}
    for key, (method, params) in requests.items():
        found = round_.answer(key, method, params)
        if found is None:
            round_.need(key, method, params)
        else:
            round_.record(key, found)
            answers[key] = found
    if round_.pending:
        raise InputRequired(", ".join(round_.pending))
    return answers
