"""What the terminal form says and how it reads what a person types, with no I/O at all.

The handler loops "show, read a line, decide": the deciding lives here, so every rule of the
conversation (commands, shortcuts, which answer fits, what each outcome is called) can be
unit-tested without a terminal, and a change to the wording or the keys is made in one place.
The readers (:func:`read_field_answer`, :func:`read_review_answer`, :func:`read_consent`)
take one typed line and return the next step; leaving the question (``:decline``, ``d``,
``:cancel``...) raises :class:`Stop`, which the handler turns into the result.

Everything a server wrote passes :func:`clean` before it reaches the screen.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from elicitkit.elicitation.fields import FieldError, FieldKind, FormField
from elicitkit.elicitation.requests import Origin

__all__ = [
    "ARROW",
    "CONSENT_AGAIN",
    "CONSENT_PROMPT",
    "HELP",
    "MASK",
    "ONE_ANSWER_HOW",
    "YES_NO_HOW",
    "Back",
    "Change",
    "Fragments",
    "Problem",
    "ReviewRow",
    "Send",
    "ShowHelp",
    "Stop",
    "Value",
    "clean",
    "command",
    "field_completions",
    "field_how",
    "field_prompt",
    "field_rules",
    "literal",
    "option_marks",
    "parse",
    "pick",
    "read_consent",
    "read_domain",
    "read_field_answer",
    "read_review_answer",
    "report_line",
    "review_prompt",
    "review_rows",
    "stopped_line",
    "who",
]

#: A prompt as (style class, text) pairs; the reader draws it (prompt_toolkit's formatted text).
Fragments = list[tuple[str, str]]

_YES = frozenset({"y", "yes", "o", "open"})
_NO = frozenset({"n", "no", "d", "decline", ":decline", ":d"})
_CANCEL = frozenset({"c", "cancel", ":cancel", ":c"})
_SEND = frozenset({"s", "send", ":send", ":s"})  # never Enter alone: sending is a choice, not a default
# Characters a server could use to redraw or reorder what the person reads.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
ARROW = " \u203a "  # the prompt's arrow

HELP = (
    "Enter alone keeps the answer in [brackets] · :back previous question · :clear no answer · "
    ":decline refuse to answer · :cancel (or Esc, Ctrl-C) dismiss · :help this line"
)
CONSENT_PROMPT: Fragments = [
    ("class:label", "Open it in your browser?"),
    ("class:hint", " [y open · :decline · :cancel]"),
    ("class:arrow", ARROW),
]
CONSENT_AGAIN = "type y to open the page, :decline to refuse, or :cancel (Esc) to dismiss the question"
YES_NO_HOW = "y or n sends that answer at once · :decline · :cancel"
ONE_ANSWER_HOW = "your answer is sent as soon as you type it · Enter alone shows it first · :decline · :cancel"
MASK = "••••••••"


class Stop(Exception):
    """The person left the question: declined it or dismissed it (``how`` says by what)."""

    def __init__(self, action: Literal["decline", "cancel"], how: str) -> None:
        super().__init__(action, how)
        self.action = action
        self.how = how


def clean(text: str, *, lines: bool = True) -> str:
    """Server text made safe to print: no escape sequences, no bidi tricks."""
    out: list[str] = []
    for ch in text:
        if ch == "\t" or (ch == "\n" and lines):
            out.append(ch)
        elif ch in _BIDI or unicodedata.category(ch) == "Cc":
            out.append("\ufffd")
        else:
            out.append(ch)
    return "".join(out)


def who(origin: Origin | None) -> str:
    """The asking server's name, safe to print on one line."""
    return clean((origin or Origin()).display_name, lines=False)


# ------------------------------------------------------------------------------ typed text


def command(text: str) -> str | None:
    """``:word`` -> the command name ("back", "decline"...); a plain answer -> None."""
    stripped = text.strip()
    if not stripped.startswith(":") or stripped.startswith("::"):
        return None
    word = stripped[1:].lower()
    if not word.isalpha():
        return None  # ":)" and the like are answers
    aliases = {"b": "back", "back": "back", "clear": "clear", "help": "help", "decline": "decline", "cancel": "cancel"}
    name = aliases.get(word, word)
    if name == "decline":
        raise Stop("decline", ":decline")
    if name == "cancel":
        raise Stop("cancel", ":cancel")
    return name


def literal(text: str) -> str:
    """``::x`` is the answer ``:x`` (how to type something that looks like a command)."""
    stripped = text.strip()
    return stripped[1:] if stripped.startswith("::") else text


def parse(field: FormField, text: str, current: Any) -> Any:
    """Typed text -> value; a multi-select also takes ``+N`` / ``-N`` against the current choice."""
    try:
        return field.parse(text)
    except FieldError:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if field.kind is not FieldKind.MULTI or not parts or not all(p[0] in "+-" for p in parts):
            raise
    chosen = list(current) if isinstance(current, list) else []
    for part in parts:
        picked = field.parse(part[1:])
        for value in picked or []:
            if part[0] == "+" and value not in chosen:
                chosen.append(value)
            elif part[0] == "-" and value in chosen:
                chosen.remove(value)
    return chosen


def pick(fields: Sequence[FormField], text: str) -> FormField | None:
    """The field a review answer names: its number, name or title."""
    if text.isdigit() and 1 <= int(text) <= len(fields):
        return fields[int(text) - 1]
    for field in fields:
        if text.casefold() in (field.name.casefold(), field.label.casefold()):
            return field
    return None


# ------------------------------------------------------------------------------ steps


@dataclass(frozen=True, slots=True)
class Value:
    """The line gave the field an answer that fits (``None``: no answer)."""

    value: Any


@dataclass(frozen=True, slots=True)
class Back:
    """Go to the previous question (at review: back to the review, unchanged)."""


@dataclass(frozen=True, slots=True)
class ShowHelp:
    """Show :data:`HELP` and ask again."""


@dataclass(frozen=True, slots=True)
class Problem:
    """Say what is wrong and ask again."""

    reason: str


@dataclass(frozen=True, slots=True)
class Send:
    """At review: send the answers (if they fit)."""


@dataclass(frozen=True, slots=True)
class Change:
    """At review: ask field number ``index`` (0-based) again."""

    index: int


def read_field_answer(
    field: FormField, text: str, current: Any, *, can_go_back: bool
) -> Value | Back | ShowHelp | Problem:
    """One typed line at a field -> the next step; raises :class:`Stop` for ``:decline`` / ``:cancel``.

    Enter alone keeps ``current``; ``:clear`` is "no answer"; every value is judged by the
    field's own schema, as the server will judge it.
    """
    name = command(text)
    if name == "back":
        return Back() if can_go_back else Problem("this is the first question")
    if name == "clear":
        value: Any = [] if field.kind is FieldKind.MULTI else None
    elif name == "help":
        return ShowHelp()
    elif name is not None:
        return Problem(f"unknown command :{name} (type ::{name} to answer with the text itself)")
    elif text.strip() == "":
        value = current
    else:
        try:
            value = parse(field, literal(text), current)
        except FieldError as exc:
            return Problem(str(exc))
    problems = field.problems(value)
    if problems:
        return Problem(" ".join(problems))  # plain words already say what is wanted
    return Value(value)


def read_review_answer(fields: Sequence[FormField], text: str) -> Send | Change | Problem:
    """One (stripped) line at the review -> send, change a field, or ask again; raises :class:`Stop`."""
    key = text.lower()
    if key in _SEND:
        return Send()
    if key in _NO:
        raise Stop("decline", text)
    if key in _CANCEL:
        raise Stop("cancel", text)
    field = pick(fields, text) if text else None
    if field is None:
        numbers = f"{'1' if len(fields) == 1 else f'1 to {len(fields)}'} changes an answer · " if fields else ""
        return Problem(f"nothing is sent until you type s · {numbers}:decline · :cancel")
    return Change(fields.index(field))


def read_domain(text: str, host: str) -> bool:
    """At a look-alike's stop: True when ``text`` is the domain's real (ASCII) name; raises :class:`Stop` to leave."""
    key = text.strip().lower()
    if key in _NO:
        raise Stop("decline", text.strip())
    if key in _CANCEL:
        raise Stop("cancel", text.strip())
    return key.rstrip(".") == host.lower()


def read_consent(text: str) -> bool:
    """One (stripped) line at "open this URL?": True to open, False to ask again; raises :class:`Stop`."""
    key = text.lower()
    if key in _YES:
        return True
    if key in _NO:
        raise Stop("decline", text)
    if key in _CANCEL:
        raise Stop("cancel", text)
    return False


# ------------------------------------------------------------------------------ what is shown


def field_how(field: FormField) -> str | None:
    """How to type a choice or a yes/no, in words (None for free text and numbers)."""
    return {
        FieldKind.CHOICE: "choose one: its number or name",
        FieldKind.MULTI: "choose any: numbers or names, comma-separated (+N / -N adds / removes)",
        FieldKind.BOOLEAN: "y or n",
    }.get(field.kind)


def field_rules(field: FormField) -> list[str]:
    """The hint line under a field's label: its rules, then how to type it."""
    rules = [clean(rule, lines=False) for rule in field.constraints()]
    how = field_how(field)
    if how:
        rules.append(how)
    return rules


def option_marks(field: FormField, current: Any) -> list[tuple[str, str, bool]]:
    """Each option as (line start with its mark and number, title, chosen now)."""
    lines = []
    width = len(str(len(field.options)))  # "10)" lines up under " 9)"
    for number, option in enumerate(field.options, 1):
        if field.kind is FieldKind.MULTI:
            chosen = isinstance(current, list) and option.value in current
            mark = "[x]" if chosen else "[ ]"
        else:
            chosen = option.value == current
            mark = "(•)" if chosen else "( )"
        lines.append((f"   {mark} {number:>{width}}) ", clean(option.title, lines=False), chosen))
    return lines


def field_completions(field: FormField) -> list[str]:
    """The words Tab offers at a field (option titles, or yes/no)."""
    if field.kind is FieldKind.BOOLEAN:
        return ["yes", "no"]
    return [o.title for o in field.options] if field.options else []


def field_prompt(field: FormField, current: Any) -> Fragments:
    """The prompt at a field: its label, y/n, and what Enter alone keeps."""
    parts: Fragments = [("class:label", clean(field.label, lines=False))]
    if field.kind is FieldKind.BOOLEAN:
        parts.append(("class:hint", " (y/n)"))
    if current is not None:
        shown = "none" if current == [] else (MASK if field.secret else field.display(current))
        parts.append(("class:hint", f" [{clean(shown, lines=False)}]"))
    elif not field.required:
        parts.append(("class:hint", " [skip]"))
    parts.append(("class:arrow", ARROW))
    return parts


def review_prompt(count: int) -> Fragments:
    """The prompt under the review table of a form with ``count`` fields."""
    numbers = "1" if count == 1 else f"1-{count}"
    choices = f" · {numbers} change an answer" if count else ""
    return [
        ("class:label", "Send?"),
        ("class:hint", f" [s send{choices} · :decline · :cancel]"),
        ("class:arrow", ARROW),
    ]


@dataclass(frozen=True, slots=True)
class ReviewRow:
    """One line of the review table, every text already cleaned."""

    number: str
    question: str
    answer: str
    unset: bool  # no answer given: ``answer`` says what happens instead (shown dimmed)
    problem: str


def review_rows(
    fields: Sequence[FormField], values: dict[str, Any], problems: dict[str | None, str]
) -> list[ReviewRow]:
    """The review table's rows: each field with its answer (or its default) and its problem."""
    rows = []
    for number, field in enumerate(fields, 1):
        value = values.get(field.name)
        if value is None:
            answer = "(default: " + clean(field.display(field.default)) + ")" if field.has_default else "—"
        else:
            answer = MASK if field.secret else clean(field.display(value))
        rows.append(
            ReviewRow(
                str(number),
                clean(field.label, lines=False) + (" *" if field.required else ""),
                answer,
                value is None,
                clean(problems.get(field.name, "")),
            )
        )
    return rows


def stopped_line(origin: Origin | None, stop: Stop, *, url: bool = False) -> str:
    """What the person is told after declining or dismissing a question.

    For a URL question it says only what surely happened (nothing was opened): a URL that
    came with a -32042 error is answered by retrying the call, not by a reply the server reads.
    """
    how = clean(stop.how, lines=False)
    if url:
        word = "Declined" if stop.action == "decline" else f"Cancelled ({how})"
        return f"✗ {word}: nothing was opened."
    if stop.action == "decline":
        return f"✗ Declined: {who(origin)} is told you will not answer."
    return f"✗ Cancelled ({how}): {who(origin)} is told you dismissed it."


def report_line(outcome: str, server: str, domain: str) -> tuple[str, str]:
    """(text, style) for how a background wait for a URL's completion ended."""
    if outcome == "done":
        return f"✓ completed: {server} confirms you finished at {domain}.", "green"
    if outcome == "key":
        return f"Stopped waiting for {server}; it carries on when you finish at {domain}.", "dim"
    if outcome == "retry":
        return f"Marked as finished at {domain}: a call waiting on it is retried now.", "dim"
    if outcome == "timeout":
        return f"No word from {server} about {domain} yet; stopped waiting.", "yellow"
    return f"Stopped waiting for {server}: the connection is gone.", "yellow"
