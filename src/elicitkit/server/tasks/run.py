"""Running a tool body once for a task: the bridge between the task engine and the server.

:class:`~elicitkit.server.tasks.runner.TaskRunner` advances a task by calling ``run_once(tool,
arguments, answers)``. Here that runs the tool exactly as a 2026-07-28 round would, with the
task's record in place of ``requestState``: a :class:`TaskRound` answers each question from the
record (answers fresh from ``tasks/update`` by key, answers pinned by an earlier run by key and
fingerprint), and a question without an answer ends the run with the round's open questions.
The scope of such a run has no live connection: progress and log notifications go nowhere, and
every question goes through the round, so ``ctx.elicit``, ``ctx.elicit_url``, resolvers,
``ctx.sample`` and ``ctx.list_roots`` work unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from elicitkit.elicitation.errors import ElicitationUnsupported
from elicitkit.protocol.errors import INVALID_PARAMS
from elicitkit.protocol.jsonrpc import JSON, Request
from elicitkit.runtime.peer import IncomingRequest
from elicitkit.server.rounds.round import BecomeTask, Round
from elicitkit.server.rounds.sealing import fingerprint_question
from elicitkit.server.scope import TASK_CLIENT_CAPABILITIES, TaskScope
from elicitkit.server.tasks.runner import Failed, Finished, NeedsInput, Outcome, Question, RunOnce
from elicitkit.server.tasks.store import RecordedAnswer

if TYPE_CHECKING:
    from elicitkit.server.server import Server
    from elicitkit.server.session import ServerSession

__all__ = ["TASK_CLIENT_CAPABILITIES", "BecomeTask", "TaskRound", "TaskScope", "make_run_once", "pinned_answers"]


class TaskRound(Round):
    """A round fed from a task's record instead of ``inputResponses`` and ``requestState``."""

    def __init__(self, answers: Mapping[str, RecordedAnswer]) -> None:
        super().__init__({key: a.response for key, a in answers.items() if a.fingerprint is None})
        self._pinned = {key: a for key, a in answers.items() if a.fingerprint is not None}

    def answer(self, key: str, method: str, params: JSON, fingerprint: str | None = None) -> JSON | None:
        if fingerprint is None:
            fingerprint = fingerprint_question({"method": method, "params": params})
        self._asked[key] = fingerprint
        fresh: JSON | None = self.responses.get(key)
        if fresh is not None:
            return fresh
        pinned = self._pinned.get(key)
        if pinned is not None and pinned.fingerprint == fingerprint:
            return pinned.response
        return None

    def result(self) -> JSON:
        """What the body's caller sees when it stops at questions (never sealed, never sent)."""
        return {"resultType": "input_required", "inputRequests": dict(self.pending)}

    def outcome(self) -> NeedsInput:
        questions = tuple(
            Question(key, request, self.asked_fingerprint(key) or fingerprint_question(request))
            for key, request in self.pending.items()
        )
        return NeedsInput(questions, pinned_answers(self))


def pinned_answers(round_: Round) -> dict[str, RecordedAnswer]:
    """The answers a run used, each pinned to the question it answered (as a round seals them)."""
    return {key: RecordedAnswer(answer, fingerprint) for key, (answer, fingerprint) in round_.used_answers().items()}


class _DetachedRequest(IncomingRequest):
    """The request a task run serves: no peer to talk back on."""

    __slots__ = ()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        return None

    async def request(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None) -> JSON:
        raise ElicitationUnsupported("a task has no connection to send requests on; ask through the context")

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


def make_run_once(server: Server, session: ServerSession) -> RunOnce:
    """The ``run_once`` a server's :class:`TaskRunner` uses: its tools, run by the replay contract.

    ``session`` is a detached session of the server (nothing is sent on it); it only gives the
    scope its server. A tool that stopped at questions is :class:`NeedsInput`; one that returned
    (a tool error included) :class:`Finished`; an ``MCPError`` raised propagates, and the runner
    records it as ``failed``.
    """

    async def run_once(tool_name: str, arguments: dict[str, Any], answers: Mapping[str, RecordedAnswer]) -> Outcome:
        round_ = TaskRound(answers)
        request = _DetachedRequest(
            session.peer,
            Request(id=f"task:{tool_name}", method="tools/call", params={"name": tool_name, "arguments": arguments}),
        )
        scope = TaskScope(request, session, round_)
        body = server.task_call(tool_name, arguments, scope)
        if body is None:
            return Failed({"code": INVALID_PARAMS, "message": f"Unknown tool: {tool_name!r}"})
        result = await scope.run(body, server)
        if round_.pending:
            return round_.outcome()
        return Finished(result)

    return run_once
