"""The scripted person: answers written down before the test runs, checked after it.

A test says what its person will answer (in order, or when a question matches) and the kit
plays that person for the client. Each answer is a :class:`Scripted` value, so the script
reads like what a person does: ``accept({...})``, ``decline()``, ``cancel()``, ``never()``
(walks away), ``after(2.5, accept())`` (slow), ``wrong({...})`` (content that breaks the
schema: the client's own check is bypassed so the server's is tested) and ``hang_up()``
(the connection drops while the question waits). Whatever the script did not foresee, and
whatever it foresaw that never happened, is reported in words a reader can act on.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio

from elicitkit import ElicitationResult, FormRequest, InvalidAnswer, UrlRequest
from elicitkit.elicitation.answers import validate_answer
from elicitkit.testing.kit.asked import Question, Questions

Matcher = str | re.Pattern[str]


@dataclass(frozen=True)
class Scripted:
    """One answer of the script: what the person does, and how."""

    action: str  # accept, decline, cancel, never, wrong, hang_up, reply
    content: dict[str, Any] | None = None
    delay: float = 0.0
    respond: Callable[[Question], Scripted | Awaitable[Scripted]] | None = field(default=None, compare=False)

    def describe(self) -> str:
        if self.respond is not None:
            return f"reply({getattr(self.respond, '__name__', 'function')})"
        text = self.action if self.content is None else f"{self.action} {self.content!r}"
        return f"{text} after {self.delay:g}s" if self.delay else text


def accept(content: dict[str, Any] | None = None) -> Scripted:
    """Accept; a form gets ``content`` (the client fills schema defaults in, as a real one does)."""
    return Scripted("accept", content)


def decline() -> Scripted:
    """Say no to the question."""
    return Scripted("decline")


def cancel() -> Scripted:
    """Dismiss the question without choosing."""
    return Scripted("cancel")


def never() -> Scripted:
    """Never answer: the question stays open (for timeouts, cancellation and dropped connections)."""
    return Scripted("never")


def after(seconds: float, answer: Scripted) -> Scripted:
    """``answer``, but only after ``seconds``: a slow person."""
    return Scripted(answer.action, answer.content, answer.delay + seconds)


def wrong(content: dict[str, Any]) -> Scripted:
    """Accept with ``content`` that does not fit the schema; it reaches the server unchecked."""
    return Scripted("wrong", dict(content))


def reply(respond: Callable[[Question], Scripted | Awaitable[Scripted]]) -> Scripted:
    """Work the answer out from the question: ``respond(question)`` (sync or async) returns one of
    the answers above; an async one may act first, calling the server's callback tool, say."""
    return Scripted("reply", respond=respond)


def hang_up() -> Scripted:
    """Drop the client's connection while this question waits for its answer."""
    return Scripted("hang_up")


@dataclass
class Rule:
    """Answers for the questions that match: by message (text or pattern), fields, mode or URL."""

    answers: list[Scripted]
    message: Matcher | None = None
    fields: frozenset[str] | None = None
    mode: str | None = None
    url: Matcher | None = None
    repeat: bool = False  # the last answer keeps answering once the others are used
    used: int = 0

    def matches(self, question: Question) -> bool:
        if self.mode is not None and question.mode != self.mode:
            return False
        if self.fields is not None and frozenset(question.fields) != self.fields:
            return False
        if self.message is not None and not _fits(self.message, question.message):
            return False
        return self.url is None or (question.url is not None and _fits(self.url, question.url))

    def exhausted(self) -> bool:
        return not self.repeat and self.used >= len(self.answers)

    def take(self) -> Scripted:
        answer = self.answers[min(self.used, len(self.answers) - 1)]
        self.used += 1
        return answer

    def describe(self) -> str:
        parts = []
        if self.message is not None:
            parts.append(f"message {_show(self.message)}")
        if self.fields is not None:
            parts.append(f"fields {sorted(self.fields)}")
        if self.mode is not None:
            parts.append(f"mode {self.mode!r}")
        if self.url is not None:
            parts.append(f"url {_show(self.url)}")
        return "when " + (", ".join(parts) or "any question")


def _fits(matcher: Matcher, text: str) -> bool:
    return matcher == text if isinstance(matcher, str) else matcher.search(text) is not None


def _show(matcher: Matcher) -> str:
    return repr(matcher) if isinstance(matcher, str) else f"matching /{matcher.pattern}/"


def _misfit(question: Question, content: dict[str, Any] | None) -> str | None:
    """Why a scripted ``accept(content)`` cannot answer this form, in words; None when it fits.

    Checked with the validator the client uses (defaults filled in first, as a real client
    does), so the test fails naming the question and the fields instead of the tool getting an
    error result (2025 eras) or the call an error (2026).
    """
    if question.mode != "form" or question.schema is None:
        return None
    try:
        validate_answer(question.schema, content or {})
    except InvalidAnswer as exc:
        return (
            f"scripted accept({content!r}) does not fit question #{question.number} {question.message!r}"
            f" (form, fields: {', '.join(question.fields) or 'none'}): {exc.reason}"
        )
    return None


@dataclass
class _Queued:
    answer: Scripted
    number: int  # 1-based position in the script, for messages
    used: bool = False


@dataclass
class Person:
    """A person who answers from a script, and remembers every question put to them.

    ``will(...)`` queues answers taken in order by questions no rule matches; ``when(...)``
    answers matching questions first. A question with no answer left is cancelled (so the
    tool can finish) and reported as unexpected; :meth:`problems` lists that and every
    scripted answer never used.
    """

    asked: Questions = field(default_factory=Questions)
    era: str = ""
    _queue: list[_Queued] = field(default_factory=list)
    _rules: list[Rule] = field(default_factory=list)
    _unexpected: list[str] = field(default_factory=list)
    _wrong: list[tuple[Question, dict[str, Any]]] = field(default_factory=list)
    on_hang_up: Callable[[], Awaitable[None]] | None = None

    def will(self, *answers: Scripted) -> Person:
        """Answer the next questions (those no rule matches) with ``answers``, in order."""
        for answer in answers:
            if not isinstance(answer, Scripted):
                raise TypeError(f"a scripted answer comes from accept(), decline(), ... not {answer!r}")
            self._queue.append(_Queued(answer, len(self._queue) + 1))
        return self

    def when(
        self,
        message: Matcher | None = None,
        *answers: Scripted,
        fields: Iterable[str] | None = None,
        mode: str | None = None,
        url: Matcher | None = None,
        always: bool = False,
    ) -> Person:
        """Answer questions that match with ``answers`` (one each, in order); ``always``: the last one keeps going."""
        if not answers:
            raise TypeError("when(...) needs at least one answer: accept(), decline(), cancel(), ...")
        if mode is not None and mode not in ("form", "url"):
            raise ValueError(f"mode is 'form' or 'url', not {mode!r}")
        rule = Rule(list(answers), message, frozenset(fields) if fields is not None else None, mode, url, always)
        self._rules.append(rule)
        return self

    # -- the callback the client calls ------------------------------------------------------

    async def __call__(self, request: FormRequest | UrlRequest, *, era: str | None = None) -> ElicitationResult[Any]:
        """Answer ``request`` from the script; ``era``: the connection's (a ``connect(era=...)``
        override), else the test's."""
        question = self.asked.record(request, era or self.era)
        answer = self._pick(question)
        if answer is None:
            script = self._script_summary()
            self._unexpected.append(f"unexpected question #{question.number}: {question.describe()}; {script}")
            question.answer = "cancel (unexpected)"
            return ElicitationResult.cancel()
        if answer.respond is not None:
            worked_out = answer.respond(question)
            answer = await worked_out if inspect.isawaitable(worked_out) else worked_out
            if not isinstance(answer, Scripted) or answer.respond is not None:
                raise TypeError(f"reply(...) must return accept(), decline(), ... not {answer!r}")
        question.answer = answer.describe()
        if answer.delay:
            await anyio.sleep(answer.delay)
        if answer.action == "never":
            await anyio.sleep_forever()
        if answer.action == "hang_up":
            if self.on_hang_up is None:
                raise RuntimeError("hang_up() needs a connection made by the elicitkit fixture")
            await self.on_hang_up()
            await anyio.sleep_forever()  # the connection is gone; the client stops waiting for us
        if answer.action == "wrong":
            assert answer.content is not None
            self._wrong.append((question, answer.content))
            return ElicitationResult.decline()  # a stand-in the client accepts; the wire gets the wrong content
        if answer.action == "accept":
            misfit = _misfit(question, answer.content)
            if misfit is not None:  # a script mistake, not the server's: say so, and let the tool finish
                self._unexpected.append(misfit)
                question.answer = f"cancel (the scripted {answer.describe()} does not fit)"
                return ElicitationResult.cancel()
            return ElicitationResult.accept(answer.content)
        return ElicitationResult.decline() if answer.action == "decline" else ElicitationResult.cancel()

    def _pick(self, question: Question) -> Scripted | None:
        for rule in self._rules:
            if not rule.exhausted() and rule.matches(question):
                return rule.take()
        for queued in self._queue:
            if not queued.used:
                queued.used = True
                return queued.answer
        return None

    def _script_summary(self) -> str:
        used = sum(q.used for q in self._queue)
        if not self._queue and not self._rules:
            return "the script has no answers (person.will(...) / person.when(...))"
        rules = f" and {len(self._rules)} rule(s) that did not match" if self._rules else ""
        return f"all {used} queued answer(s) were used already{rules}"

    def take_wrong(self, message: str) -> dict[str, Any] | None:
        """The schema-violating content scripted for the question with this message (once), if any."""
        for i, (question, content) in enumerate(self._wrong):
            if question.message == message:
                del self._wrong[i]
                return content
        return None

    # -- after the test ---------------------------------------------------------------------

    def unexpected(self) -> list[str]:
        """Questions the script had no answer for (reported once)."""
        found, self._unexpected = self._unexpected, []
        return found

    def unused(self) -> list[str]:
        """Scripted answers never given, in words."""
        left = [
            f"scripted answer #{q.number} ({q.answer.describe()}) was never used" for q in self._queue if not q.used
        ]
        for rule in self._rules:
            if rule.used == 0 or (not rule.repeat and rule.used < len(rule.answers)):
                missing = ", ".join(a.describe() for a in rule.answers[rule.used :])
                left.append(f"answer(s) {missing} for questions {rule.describe()[5:]} were never used")
        return left

    def problems(self) -> list[str]:
        return self.unexpected() + self.unused()

    def assert_done(self) -> None:
        """Fail now if a question was unexpected or a scripted answer is left over (reported once)."""
        __tracebackhide__ = True
        problems = self.problems()
        for queued in self._queue:
            queued.used = True
        for rule in self._rules:
            rule.used = max(rule.used, len(rule.answers))
        if problems:
            raise AssertionError("the scripted person:\n  " + "\n  ".join(problems))
