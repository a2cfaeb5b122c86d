"""A requested schema seen as a list of form fields, for the handlers that show it to a person.

The terminal form and the browser form both render from :func:`form_fields` and both judge
input with :meth:`FormField.parse` (text -> typed value) and :func:`check_form` (the whole
answer, through the same :func:`~elicitkit.elicitation.answers.validate_answer` the server
runs), so a value one UI accepts the other accepts too, and the server agrees.
"""

from __future__ import annotations

import math
import re
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
_EXAMPLES = {
    "email": "Not an email address: write it like name@example.com.",
    "uri": "Not a web address: write it in full, like https://example.com/page.",
    "date": "Not a date: write it like 2025-12-31.",
    "date-time": "Not a date and time: write it like 2025-12-31T18:30:00Z.",
}
#: Words that mark a field as a secret (matched in its name, title and description); the
#: sensitive-field guard of :mod:`.policy` refuses such forms, the UIs mask what is typed.
SECRET_PATTERNS: tuple[str, ...] = (
    r"pass(word|wd|phrase|code)?\b",
    r"\bpwd\b",
    r"secret",
    r"(api|access|auth|bearer|refresh|session|private|secret)[\s_-]*(key|token)",
    r"\btoken\b",
    r"\bcredentials?\b",
    r"\b(otp|2fa|mfa|totp)\b",
    r"\bpin\b",
    r"(credit|debit)[\s_-]*card",
    r"card[\s_-]*(number|no|num)\b",
    r"\b(cc|card)[\s_-]*(num|number|cvv|cvc)\b",
    r"\b(cvv|cvc|cvv2|csc)\b",
    r"\biban\b",
    r"\b(ssn|social[\s_-]*security)\b",
)
_SECRET = re.compile("|".join(f"(?:{p})" for p in SECRET_PATTERNS), re.IGNORECASE)
_TRUE = frozenset({"y", "yes", "true", "t", "1", "on"})
_FALSE = frozenset({"n", "no", "false", "f", "0", "off"})


class FieldKind(StrEnum):
    TEXT = "text"
    NUMBER = "number"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    CHOICE = "choice"  # single select
    MULTI = "multi"  # multi select


_INTEGER = re.compile(r"-?[0-9]{1,4000}")  # under int()'s digit limit: a longer one is a field error, not a crash
_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_OPTION_NUMBER = re.compile(r"[0-9]{1,6}")


_SCALAR = "value"  # the one field of a single-value question (schema.SCALAR_FIELD)
_ACRONYMS = frozenset(
    {"api", "cpu", "gpu", "ram", "url", "uri", "id", "ip", "dns", "ssh", "http", "https", "sql", "ssl", "tls"}
    | {"vpn", "pin", "sms", "os", "ui", "db", "aws", "gcp", "iban", "vat"}
)


def _from_name(title: str, name: str) -> bool:
    """Whether ``title`` says no more than the property name it was made from (``"Cpu Cores"`` for ``cpu_cores``)."""

    def squash(text: str) -> str:
        return "".join(ch for ch in text.casefold() if ch.isalnum())

    return squash(title) == squash(name)


def _acronyms(text: str) -> str:
    """Known acronyms written as such (``Api key`` -> ``API key``); the rest as it was."""
    words = re.split(r"([_\-\s]+)", text)
    return "".join(w.upper() if w.casefold() in _ACRONYMS else w for w in words)


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
        """What the field is called for a person: its title, unless that is only its Python name.

        A title made from the name (``cpu_cores`` -> "Cpu cores") gives way to a description
        that says the same words ("CPU cores"); else known acronyms are written as such
        ("Api key" -> "API key"), and the one field of a single-value question is "Your answer".
        """
        title = self.schema.get("title")
        if isinstance(title, str) and title and not _from_name(title, self.name):
            return title
        text = self.description
        if text is not None and _from_name(text, self.name):  # "CPU cores" for cpu_cores: the author's spelling
            return text
        if self.name == _SCALAR and not (isinstance(title, str) and title not in ("", "Value")):
            return "Your answer"
        return _acronyms(title if isinstance(title, str) and title else self.name)

    @property
    def description(self) -> str | None:
        text = self.schema.get("description")
        return text if isinstance(text, str) and text else None

    @property
    def help(self) -> str | None:
        """The description to show under the label (None when it already is the label)."""
        text = self.description
        return None if text is None or text == self.label else text

    @property
    def has_default(self) -> bool:
        return "default" in self.schema

    @property
    def default(self) -> Any:
        return self.schema.get("default")

    @property
    def secret(self) -> bool:
        """A password, token, card number...: typed masked and never shown back in clear."""
        if self.format == "password" or self.schema.get("writeOnly") is True:
            return True
        texts = [name_words(self.name), *(str(self.schema.get(k, "")) for k in ("title", "description"))]
        return any(_SECRET.search(text) for text in texts)

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
            if isinstance(s.get("pattern"), str) and not self.description:
                # With a description the author already says what is wanted; without, put the pattern in words.
                out.append(describe_pattern(s["pattern"]) or "in the form the server expects")
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
            raise FieldError("Answer yes or no.")
        if self.kind is FieldKind.INTEGER:
            # ASCII digits only: int() also takes other scripts' digits, "1_000" and "+7", never meant in a form
            try:
                if not _INTEGER.fullmatch(text):
                    raise ValueError(text)
                return int(text)
            except ValueError:
                raise FieldError("Not a whole number: write digits only, like 42.") from None
        if self.kind is FieldKind.NUMBER:
            try:
                if not _NUMBER.fullmatch(text):
                    raise ValueError(text)
                number = float(text)
            except ValueError:
                raise FieldError("Not a number: write it like 3 or 2.5.") from None
            if not math.isfinite(number):
                raise FieldError("Not a number: write it like 3 or 2.5.")
            return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        if self.kind is FieldKind.CHOICE:
            return self._option(text)
        if self.kind is FieldKind.MULTI:
            whole = self._match(text)  # one option whose title holds commas, typed whole
            if whole is not None:
                return [whole]
            parts = [p for p in (p.strip() for p in text.split(",")) if p]
            chosen: list[str] = []
            for part in parts:
                value = self._option(part, split=True)
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

    def _match(self, text: str) -> str | None:
        for option in self.options:
            if text == option.value:
                return option.value
        for option in self.options:
            if text.casefold() == option.title.casefold():
                return option.value
        if _OPTION_NUMBER.fullmatch(text) and 1 <= int(text) <= len(self.options):  # ASCII, short: int() cannot fail
            return self.options[int(text) - 1].value
        return None

    def _option(self, text: str, *, split: bool = False) -> str:
        """The option ``text`` names (value, title or number); ``split``: it is one part of a
        comma-separated answer, so a title holding a comma is worth a word about numbers."""
        found = self._match(text)
        if found is not None:
            return found
        if any("," in o.title for o in self.options):  # titles with commas: quoted and numbered, unambiguous
            offered = "; ".join(f"{n} \u201c{o.title}\u201d" for n, o in enumerate(self.options, 1))
            how = " (names hold commas: type numbers, like 1,3)" if split else ""
            raise FieldError(f"\u201c{text}\u201d is not one of the choices{how}: pick {offered}.")
        offered = ", ".join(o.title for o in self.options)
        raise FieldError(f"\u201c{text}\u201d is not one of the choices: pick {offered}.")

    def problems(self, value: Any) -> list[str]:
        """Why ``value`` does not fit this field, in plain words (judged by the server's own validator).

        The validator decides; :func:`explain` only words what it found, rule by rule, using
        the schema's description for a pattern when the author gave one.
        """
        if value is None:
            return ["This is required: please answer it."] if self.required and not self.has_default else []
        found = field_problems(self.schema, value)
        if not found:
            return []
        return [explain(self, value) or _humanize(found[0])]


def name_words(name: str) -> str:
    """``apiKey`` / ``api_key`` / ``API-Key`` -> ``api key``: so one pattern matches every spelling."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return re.sub(r"[_\-.]+", " ", spaced).lower()


_PATTERN_ATOMS = {
    r"\d": ("digit", "digits"),
    "[0-9]": ("digit", "digits"),
    "[A-Z]": ("capital letter", "capital letters"),
    "[a-z]": ("small letter", "small letters"),
    "[A-Za-z]": ("letter", "letters"),
    "[a-zA-Z]": ("letter", "letters"),
    "[A-Z0-9]": ("capital letter or digit", "capital letters or digits"),
    "[A-Za-z0-9]": ("letter or digit", "letters or digits"),
    r"\w": ("letter, digit or _", "letters, digits or _"),
}
_ATOM = re.compile(r"(\\d|\\w|\[[^\]]+\]|\\.|[^\\\[\](){}*+?|^$])(\{(\d+)(?:,(\d*))?\}|[*+?])?")


def describe_pattern(pattern: str) -> str | None:
    """A simple anchored pattern in words (``^[A-Z]{3}-\\d{3}$`` -> "3 capital letters, then “-”,
    then 3 digits"); None when it is not that simple, so the caller words it another way."""
    if not (pattern.startswith("^") and pattern.endswith("$")) or pattern.endswith("\\$"):
        return None
    body, parts, pos = pattern[1:-1], [], 0
    literal = ""
    while pos < len(body):
        match = _ATOM.match(body, pos)
        if match is None:
            return None
        atom, quant, low, high = match.group(1), match.group(2), match.group(3), match.group(4)
        pos = match.end()
        if atom in _PATTERN_ATOMS or atom.startswith("[") or atom == ".":
            if atom not in _PATTERN_ATOMS:
                return None
            one, many = _PATTERN_ATOMS[atom]
        else:
            char = atom[1:] if atom.startswith("\\") else atom
            if quant is None:
                literal += char
                continue
            return None
        if literal:
            parts.append(f"\u201c{literal}\u201d")
            literal = ""
        if quant is None:
            parts.append(f"1 {one}")
        elif quant == "+":
            parts.append(f"1 or more {many}")
        elif quant == "*":
            parts.append(f"any number of {many}")
        elif quant == "?":
            parts.append(f"an optional {one}")
        elif high is None:
            parts.append(f"{low} {one if low == '1' else many}")
        elif high == "":
            parts.append(f"at least {low} {many}")
        else:
            parts.append(f"{low} to {high} {many}")
    if literal:
        parts.append(f"\u201c{literal}\u201d")
    return ", then ".join(parts) if parts else None


def explain(f: FormField, value: Any) -> str | None:
    """The first rule of ``f`` that ``value`` breaks, in plain words; None when none of them is broken."""
    s = f.schema
    if f.kind is FieldKind.TEXT and isinstance(value, str):
        lo, hi = s.get("minLength"), s.get("maxLength")
        if isinstance(lo, int) and len(value) < lo:
            return f"Too short: use at least {lo} character{'s' if lo != 1 else ''} (this has {len(value)})."
        if isinstance(hi, int) and len(value) > hi:
            return f"Too long: use at most {hi} character{'s' if hi != 1 else ''} (this has {len(value)})."
        pattern = s.get("pattern")
        if isinstance(pattern, str):
            try:
                fits = re.search(pattern, value) is not None
            except re.error:
                fits = True
            if not fits:
                wanted = f.description or describe_pattern(pattern)
                return f"Not in the expected form: {wanted}." if wanted else "Not in the form the server expects."
        if f.format in _EXAMPLES and field_problems({"type": "string", "format": f.format}, value):
            return _EXAMPLES[f.format]
    if f.kind in (FieldKind.NUMBER, FieldKind.INTEGER) and isinstance(value, (int, float)):
        lo, hi = s.get("minimum"), s.get("maximum")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            if lo is not None and hi is not None:
                return f"Out of range: use a number from {lo} to {hi}."
            if lo is not None:
                return f"Too small: use {lo} or more."
            return f"Too large: use {hi} or less."
    if f.kind is FieldKind.MULTI and isinstance(value, list):
        lo, hi = s.get("minItems"), s.get("maxItems")
        if isinstance(lo, int) and len(value) < lo:
            return "Choose at least one." if lo == 1 else f"Choose at least {lo}."
        if isinstance(hi, int) and len(value) > hi:
            return f"Too many: choose at most {hi} (you chose {len(value)})."
        if any(v not in {o.value for o in f.options} for v in value):
            return "Choose only from the options shown."
    if f.kind is FieldKind.CHOICE and value not in {o.value for o in f.options}:
        return "Choose one of the options shown."
    return None


def _range_words(low: Any, high: Any, unit: str) -> list[str]:
    if low is not None and high is not None:
        return [f"{low} to {high} {unit}s"]
    if low is not None:
        return [f"at least {low} {unit}{'s' if low != 1 else ''}"]
    if high is not None:
        return [f"at most {high} {unit}{'s' if high != 1 else ''}"]
    return []


def _humanize(message: str) -> str:
    """A validator message no rule of :func:`explain` covered, made readable (no doubled backslashes)."""
    for fmt, words in _EXAMPLES.items():
        if f"is not a '{fmt}'" in message:
            return words
    if message == "required field is missing":
        return "This is required: please answer it."
    return message.replace("\\\\", "\\")


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
        by_name = {f.name: f for f in form_fields(schema)}
        problems: dict[str | None, str] = {}
        for name, reason in exc.problems:
            f = by_name.get(name) if name is not None else None
            if f is not None and name not in problems:
                words = f.problems(content.get(f.name))
                problems[name] = words[0] if words else _humanize(reason)
            else:
                problems.setdefault(name, _humanize(reason))
        # The form's order, not the validator's: a summary then reads top to bottom.
        order = {f.name: i for i, f in enumerate(by_name.values())}
        return dict(sorted(problems.items(), key=lambda item: order.get(item[0], -1) if item[0] else -1))
    return {}


def answer_content(schema: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The content to send: set values only, defaults filled in, validated (raises InvalidAnswer)."""
    return validate_answer(schema, {k: v for k, v in values.items() if v is not None})
