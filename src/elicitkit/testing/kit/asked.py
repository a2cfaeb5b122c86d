"""What the tool asked: every question as the person saw it, and assertions that explain themselves.

A failed assertion says which question, what was expected and what came, and for schemas a
unified diff of the two as indented JSON, so the fix is visible without a debugger.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from elicitkit import FormRequest, UrlRequest

Expected = str | re.Pattern[str]


def _pretty(value: Any) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def schema_diff(expected: Any, actual: Any, *, label: str = "schema") -> str:
    """A unified diff of two JSON values (sorted keys, indented): ``-`` expected, ``+`` asked."""
    lines = difflib.unified_diff(
        _pretty(expected), _pretty(actual), fromfile=f"expected {label}", tofile=f"asked {label}", lineterm=""
    )
    return "\n".join(lines)


def _fits(expected: Expected, text: str) -> bool:
    return expected == text if isinstance(expected, str) else expected.fullmatch(text) is not None


def _show(expected: Expected) -> str:
    return repr(expected) if isinstance(expected, str) else f"/{expected.pattern}/"


@dataclass
class Question:
    """One question put to the person: its place, mode, message, and schema or URL."""

    number: int  # 1-based, in asking order
    mode: str  # "form" or "url"
    message: str
    schema: dict[str, Any] | None  # forms
    url: str | None  # URL mode
    server: str | None
    era: str
    answer: str = ""  # what the script answered, in words
    elicitation_id: str | None = None  # URL mode on 2025-11-25 (2026-07-28 has none)

    @property
    def fields(self) -> tuple[str, ...]:
        """A form's field names, in schema order."""
        return tuple((self.schema or {}).get("properties", {}))

    @property
    def domain(self) -> str | None:
        """The host a URL question sends the person to."""
        return urlsplit(self.url).hostname if self.url else None

    def describe(self) -> str:
        if self.mode == "url":
            return f"{self.message!r} (url {self.url})"
        return f"{self.message!r} (form, fields: {', '.join(self.fields) or 'none'})"

    def snapshot(self) -> dict[str, Any]:
        """What a snapshot keeps of this question: stable across runs and transports."""
        if self.mode == "url":
            return {"mode": "url", "message": self.message, "url": self.url}
        return {"mode": "form", "message": self.message, "requestedSchema": self.schema}

    # -- assertions -------------------------------------------------------------------------

    def _fail(self, what: str) -> AssertionError:
        return AssertionError(f"question #{self.number} {self.message!r}: {what}")

    def assert_message(self, expected: Expected) -> None:
        __tracebackhide__ = True  # a failure reads from the test's line
        if not _fits(expected, self.message):
            raise self._fail(f"expected the message {_show(expected)}")

    def assert_mode(self, expected: str) -> None:
        __tracebackhide__ = True  # a failure reads from the test's line
        if self.mode != expected:
            raise self._fail(f"expected a {expected} question, it was a {self.mode} question")

    def assert_schema(self, expected: dict[str, Any]) -> None:
        """The requested schema is exactly ``expected`` (a diff on mismatch)."""
        __tracebackhide__ = True  # a failure reads from the test's line
        if self.mode != "form":
            raise self._fail(f"expected a form with a schema, it was a {self.mode} question")
        if self.schema != expected:
            raise self._fail("the requested schema differs:\n" + schema_diff(expected, self.schema))

    def assert_fields(self, *names: str) -> None:
        """The form asks for exactly these fields (in any order)."""
        __tracebackhide__ = True  # a failure reads from the test's line
        if set(self.fields) != set(names):
            missing = sorted(set(names) - set(self.fields))
            extra = sorted(set(self.fields) - set(names))
            asked = list(self.fields)
            raise self._fail(f"expected fields {sorted(names)}, asked {asked} (missing {missing}, extra {extra})")

    def assert_url(self, expected: Expected | None = None, *, domain: str | None = None) -> None:
        """A URL question: the URL (text or pattern, whole) and/or its domain."""
        __tracebackhide__ = True  # a failure reads from the test's line
        if self.mode != "url" or self.url is None:
            raise self._fail(f"expected a url question, it was a {self.mode} question")
        if expected is not None and not _fits(expected, self.url):
            raise self._fail(f"expected the url {_show(expected)}, asked {self.url!r}")
        if domain is not None and self.domain != domain:
            raise self._fail(f"expected a url on {domain!r}, it sends the person to {self.domain!r} ({self.url})")


class Questions:
    """Every question asked in a test, in order; indexable, with assertions on the whole list."""

    def __init__(self) -> None:
        self._items: list[Question] = []

    def record(self, request: FormRequest | UrlRequest, era: str) -> Question:
        server = request.origin.name if request.origin is not None else None
        if isinstance(request, UrlRequest):
            number = len(self._items) + 1
            question = Question(number, "url", request.message, None, request.url, server, era)
            question.elicitation_id = request.elicitation_id or None
        else:
            schema = request.requested_schema
            question = Question(len(self._items) + 1, "form", request.message, schema, None, server, era)
        self._items.append(question)
        return question

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Question]:
        return iter(self._items)

    def __getitem__(self, index: int) -> Question:
        __tracebackhide__ = True  # a failure reads from the test's line
        try:
            return self._items[index]
        except IndexError:
            raise AssertionError(f"no question #{index + 1 if index >= 0 else index}: {self._summary()}") from None

    @property
    def messages(self) -> list[str]:
        return [q.message for q in self._items]

    def clear(self) -> None:
        """Forget what was asked so far (numbering starts again)."""
        self._items.clear()

    def _summary(self) -> str:
        if not self._items:
            return "nothing was asked"
        return f"{len(self._items)} question(s) asked: " + "; ".join(f"#{q.number} {q.message!r}" for q in self._items)

    def assert_count(self, expected: int) -> None:
        __tracebackhide__ = True  # a failure reads from the test's line
        if len(self._items) != expected:
            raise AssertionError(f"expected {expected} question(s), {self._summary()}")

    def assert_nothing_asked(self) -> None:
        __tracebackhide__ = True  # a failure reads from the test's line
        self.assert_count(0)

    def assert_messages(self, *expected: Expected) -> None:
        """Exactly these questions, in this order (each a message or a pattern matching it whole)."""
        __tracebackhide__ = True  # a failure reads from the test's line
        lines, ok = [], len(expected) == len(self._items)
        for i in range(max(len(expected), len(self._items))):
            want = expected[i] if i < len(expected) else None
            got = self._items[i].message if i < len(self._items) else None
            if want is not None and got is not None and _fits(want, got):
                lines.append(f"  #{i + 1} ok       {got!r}")
                continue
            ok = False
            if got is None:
                assert want is not None
                lines.append(f"  #{i + 1} missing  expected {_show(want)}, never asked")
            elif want is None:
                lines.append(f"  #{i + 1} extra    {got!r} was asked, not expected")
            else:
                lines.append(f"  #{i + 1} differs  expected {_show(want)}, asked {got!r}")
        if not ok:
            raise AssertionError("the questions asked are not the ones expected:\n" + "\n".join(lines))
