"""A fleet's server pages: each page, its token, its answer and the claim secret on the backplane.

Why: behind a round-robin balancer the link result comes from instance A, the person's GET
from B, the POST from C and the call that collects the answer from any of them. So in a fleet
the truth about a page is the backplane's page storage (:meth:`Backplane.page_put` and
friends), never one process's memory: every page request loads the question from there and
saves it back (:class:`~elicitkit.elicitation.webapp.QuestionStore`), and the answer is
*taken* from there in one atomic step, so it serves exactly one call.

Names (under the backplane's own prefix): ``q:<digest of token>`` the question's state (the
token itself is not stored: a reader of the store cannot open pages), ``d:<digest>`` the
first answer (of two posts racing, one wins; it stands over any step saved after it),
``k:<page key>`` the token of a page key's page, ``a:<page key>`` its answer waiting to be
taken. The claim secret is derived from the fleet's key (:meth:`Backplane.shared_secret`),
the same on every instance.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

import anyio

from elicitkit.elicitation.page_state import from_state, result_from_json, result_to_json, to_state
from elicitkit.elicitation.results import ElicitationResult

if TYPE_CHECKING:
    from elicitkit.backplane.base import Backplane
    from elicitkit.elicitation.webapp import FormApp, Question

__all__ = ["FleetPages"]

POLL = 0.2  # seconds between looks at a waited-for page's state (an answer may come through any instance)


_OUTCOMES: dict[str, Any] = {"accept": "sent", "decline": "declined", "cancel": "cancelled"}


def _result(raw: bytes) -> ElicitationResult[Any] | None:
    try:
        return result_from_json(json.loads(raw))
    except ValueError:
        return None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:40]


class FleetPages:
    """One server's pages on its fleet's backplane; ``ttl`` (seconds) bounds what is kept."""

    def __init__(self, backplane: Backplane, app: FormApp, ttl: float) -> None:
        self.backplane = backplane
        self.app = app
        self.ttl = ttl

    # -- the QuestionStore the form app uses on every request

    async def load(self, token: str) -> Question | None:
        name = _digest(token)
        raw = await self.backplane.page_get("q:" + name)
        if raw is None:
            return None
        try:
            question = from_state(json.loads(raw), self.app.prefix)
        except (ValueError, KeyError, TypeError):
            return None
        if question.token != token:
            return None
        if question.result is None:  # a step saved by another instance may have raced the answer: it stands
            first = await self.backplane.page_get("d:" + name)
            result = None if first is None else _result(first)
            if result is not None:
                question.result, question.stage = result, "closed"
                question.outcome = _OUTCOMES[result.action.value]
                question.done.set()
        return question

    async def save(self, question: Question) -> Question:
        name = _digest(question.token)
        if question.result is not None:
            stored = await self.load(question.token)
            if stored is not None and stored.result is None:
                answer = json.dumps(result_to_json(question.result)).encode()
                first = await self.backplane.page_put("d:" + name, answer, self.ttl, only_new=True)
                if not first:  # another instance took an answer for it meanwhile: that one stands
                    return await self.load(question.token) or stored
                if question.key is not None:
                    await self.backplane.page_put("a:" + question.key, answer, self.ttl)
        await self._put(question)
        return question

    async def _put(self, question: Question) -> None:
        body = json.dumps(to_state(question), separators=(",", ":")).encode()
        await self.backplane.page_put("q:" + _digest(question.token), body, self.ttl)

    # -- the page host's questions by key

    async def page_for(self, key: str) -> Question | None:
        """The page of ``key``: open, or answered and not yet taken; None otherwise."""
        token = await self.backplane.page_get("k:" + key)
        return None if token is None else await self.load(token.decode())

    async def opened(self, key: str, question: Question) -> None:
        question.key = key
        await self._put(question)
        await self.backplane.page_put("k:" + key, question.token.encode(), self.ttl)

    async def take(self, key: str) -> tuple[ElicitationResult[Any], str] | None:
        """The answer of ``key``'s page and its token, removed: one taker only."""
        raw = await self.backplane.page_take("a:" + key)
        if raw is None:
            return None
        token = await self.backplane.page_get("k:" + key)
        await self.backplane.page_delete("k:" + key)
        result = _result(raw)
        return None if result is None else (result, "" if token is None else token.decode())

    async def put_back(self, key: str, result: ElicitationResult[Any], token: str) -> None:
        """An answer taken by a call that then needed another page: it waits for that call's next attempt."""
        await self.backplane.page_put("a:" + key, json.dumps(result_to_json(result)).encode(), self.ttl)
        if token:
            await self.backplane.page_put("k:" + key, token.encode(), self.ttl)

    async def withdraw(self, key: str) -> None:
        """``key``'s page is withdrawn unanswered: its token stops working everywhere."""
        token = await self.backplane.page_get("k:" + key)
        if token is not None:
            question = await self.load(token.decode())
            if question is not None and question.result is None:
                await self.backplane.page_delete("q:" + _digest(question.token))
            await self.backplane.page_delete("k:" + key)

    async def wait(self, question: Question, timeout: float) -> ElicitationResult[Any] | None:
        """The answer given on ``question``'s page through any instance, or None after ``timeout`` s."""
        with anyio.move_on_after(timeout):
            while True:
                stored = await self.load(question.token)
                if stored is None:
                    return None  # withdrawn or expired
                if stored.result is not None:
                    question.result = stored.result
                    return stored.result
                await anyio.sleep(POLL)
        return None
