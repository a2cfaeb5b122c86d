"""A requested schema seen as a list of form fields, for the handlers that show it to a person.

The terminal form and the browser form both render from :func:`form_fields` and both judge
input with :meth:`FormField.parse` (text -> typed value) and :func:`check_form` (the whole
answer, through the same :func:`~elicitkit.elicitation.answers.validate_answer` the server
runs), so a value one UI accepts the other accepts too, and the server agrees.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from elicitkit.elicitation.answers import field_problems, validate_answer
from elicitkit.elicitation.errors import InvalidAnswer

_FORMAT_NAMES = {
    "email": "an email address",
    "uri": "a URL",
    "date": "a date (YYYY-MM-DD)",
    "date-time": "a date and time (YYYY-MM-DDTHH:MM:SSZ)",
}
_TRUE = frozenset({"y", "yes", "true", "t", "1", "on"})
_FALSE = frozenset({"n", "no", "false", "f", "0", "off"})


class FieldKind(StrEnum):
    TEXT = "text"
    NUMBER = "number"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    CHOICE = "choice"  # single select
    MULTI = "multi"  # multi select


class FieldError(ValueError):
    """Input that does not fit a field; ``str()`` is the reason, ready to show."""


@dataclass(frozen=True, slots=True)
class Option:
    value: str
    title: str


@dataclass(frozen=True, slots=True)
class FormField:
    """One property of a requested schema, with what a UI needs to show and check it."""

    name: str
    kind: FieldKind
    schema: dict[str, Any] = field(repr=False)
    required: bool = False
    options: tuple[Option, ...] = ()

    @property
    def label(self) -> str:
        title = self.schema.get("title")
        return title if isinstance(title, str) and title else self.name

    @property
    def description(self) -> str | None:
        text = self.schema.get("description")
        return text if isinstance(text, str) and text else None

    @property
    def has_default(self) -> bool:
        return "default" in self.schema

    @property
    def default(self) -> Any:
        return self.schema.get("default")

    @property
    def format(self) -> str | None:
        fmt = self.schema.get("format")
        return fmt if isinstance(fmt, str) else None

    def constraints(self) -> list[str]:
        """The field's rules in words, e.g. ``["3 to 40 characters", "an email address"]``."""
        s = self.schema
        out: list[str] = []
        if self.kind is FieldKind.TEXT:
            out.extend(_range_words(s.get("minLength"), s.get("maxLength"), "character"))
            if self.format:
                out.append(_FORMAT_NAMES.get(self.format, self.format))
            if isinstance(s.get("pattern"), str):
                out.append(f"matching {s['pattern']}")
        elif self.kind in (FieldKind.NUMBER, FieldKind.INTEGER):
            out.append("a whole number" if self.kind is FieldKind.INTEGER else "a number")
            lo, hi = s.get("minimum"), s.get("maximum")
            if lo is not None and hi is not None:
                out.append(f"from {lo} to {hi}")
            elif lo is not None:
                out.append(f"at least {lo}")
            elif hi is not None:
                out.append(f"at most {hi}")
        elif self.kind is FieldKind.MULTI:
            out.extend(_range_words(s.get("minItems"), s.get("maxItems"), "choice"))
        return out

    def title_of(self, value: str) -> str:
        for option in self.options:
            if option.value == value:
                return option.title
        return value

    def display(self, value: Any) -> str:
        """A value as a person should read it (option titles, yes/no)."""
        if value is None:
            return ""
        if self.kind is FieldKind.BOOLEAN:
            return "yes" if value else "no"
        if self.kind is FieldKind.CHOICE:
            return self.title_of(str(value))
        if self.kind is FieldKind.MULTI:
            return ", ".join(self.title_of(str(v)) for v in value) if value else "(none)"
        return str(value)

    def parse(self, text: str) -> Any:
        """Typed text -> the field's value; raises :class:`FieldError` with the reason.

        Choices take an option's value, its title (any case) or its 1-based number; a
        multi-select takes them separated by commas. An empty string is :data:`None` (unset).
        """
        text = text.strip()
        if text == "":
            return None
        if self.kind is FieldKind.BOOLEAN:
            low = text.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise FieldError("answer yes or no")
        if self.kind is FieldKind.INTEGER:
            try:
                return int(text)
            except ValueError:
                raise FieldError(f"{text!r} is not a whole number") from None
        if self.kind is FieldKind.NUMBER:
            try:
                number = float(text)
            except ValueError:
                raise FieldError(f"{text!r} is not a number") from None
            if not math.isfinite(number):
                raise FieldError("the number must be finite")
            return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        if self.kind is FieldKind.CHOICE:
            return self._option(text)
        if self.kind is FieldKind.MULTI:
            parts = [p for p in (p.strip() for p in text.split(",")) if p]
            chosen: list[str] = []
            for part in parts:
                value = self._option(part)
                if value not in chosen:
                    chosen.append(value)
            return chosen
        return text

    def parse_choices(self, texts: Iterable[str]) -> list[str]:
        """Chosen options given one per string, as a browser sends ticked boxes; raises :class:`FieldError`.

        Unlike :meth:`parse` nothing is split on commas, so an option whose value holds a comma
        still works; each string is matched like one choice in :meth:`parse`, blanks are skipped
        and repeats kept once.
        """
        chosen: list[str] = []
        for text in texts:
            text = text.strip()
            if text:
                value = self._option(text)
                if value not in chosen:
                    chosen.append(value)
        return chosen

    def _option(self, text: str) -> str:
        for option in self.options:
            if text == option.value:
                return option.value
        for option in self.options:
            if text.casefold() == option.title.casefold():
                return option.value
        if text.isdigit() and 1 <= int(text) <= len(self.options):
            return self.options[int(text) - 1].value
        offered = ", ".join(o.title for o in self.options)
        raise FieldError(f"{text!r} is not one of the choices ({offered})")

    def problems(self, value: Any) -> list[str]:
        """Why ``value`` does not fit this field (JSON Schema, same validator as the server)."""
        if value is None:
            return ["this field is required"] if self.required and not self.has_default else []
        return [_humanize(p) for p in field_problems(self.schema, value)]


def _range_words(low: Any, high: Any, unit: str) -> list[str]:
    if low is not None and high is not None:
        return [f"{low} to {high} {unit}s"]
    if low is not None:
        return [f"at least {low} {unit}{'s' if low != 1 else ''}"]
    if high is not None:
        return [f"at most {high} {unit}{'s' if high != 1 else ''}"]
    return []


def _humanize(message: str) -> str:
    if "is not a 'email'" in message:
        return "not a valid email address"
    if "is not a 'uri'" in message:
        return "not a valid URL (include the scheme, e.g. https://)"
    if "is not a 'date-time'" in message:
        return "not a valid date and time (YYYY-MM-DDTHH:MM:SSZ)"
    if "is not a 'date'" in message:
        return "not a valid date (YYYY-MM-DD)"
    return message


def _options(prop: dict[str, Any]) -> tuple[Option, ...]:
    if isinstance(prop.get("oneOf"), list):
        return tuple(Option(o["const"], o.get("title", o["const"])) for o in prop["oneOf"])
    if isinstance(prop.get("enum"), list):
        names = prop.get("enumNames")
        titles = names if isinstance(names, list) and len(names) == len(prop["enum"]) else prop["enum"]
        return tuple(Option(v, t) for v, t in zip(prop["enum"], titles, strict=True))
    items = prop.get("items")
    if isinstance(items, dict):
        if isinstance(items.get("anyOf"), list):
            return tuple(Option(o["const"], o.get("title", o["const"])) for o in items["anyOf"])
        if isinstance(items.get("enum"), list):
            return tuple(Option(v, v) for v in items["enum"])
    return ()


def _kind(prop: dict[str, Any]) -> FieldKind:
    kind = prop.get("type")
    if kind == "array":
        return FieldKind.MULTI
    if kind == "boolean":
        return FieldKind.BOOLEAN
    if kind == "integer":
        return FieldKind.INTEGER
    if kind == "number":
        return FieldKind.NUMBER
    if "oneOf" in prop or "enum" in prop:
        return FieldKind.CHOICE
    return FieldKind.TEXT


def form_fields(schema: dict[str, Any]) -> list[FormField]:
    """The fields of a (gated) requested schema, in the order the server gave them."""
    required = set(schema.get("required", []))
    fields: list[FormField] = []
    for name, prop in schema.get("properties", {}).items():
        fields.append(FormField(name, _kind(prop), prop, name in required, _options(prop)))
    return fields


def check_form(schema: dict[str, Any], values: dict[str, Any]) -> dict[str | None, str]:
    """Problems with a whole answer, by field name (None: the form as a whole); empty when valid.

    Unset (``None``) values are left out first, so an optional empty field is simply omitted
    and the schema's default, if any, fills it, as the server will.
    """
    content = {k: v for k, v in values.items() if v is not None}
    try:
        validate_answer(schema, content)
    except InvalidAnswer as exc:
        problems: dict[str | None, str] = {}
        for name, reason in exc.problems:
            problems.setdefault(name, _humanize(reason))
        return problems
    return {}


def answer_content(schema: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The content to send: set values only, defaults filled in, validated (raises InvalidAnswer)."""
    return validate_answer(schema, {k: v for k, v in values.items() if v is not None})
