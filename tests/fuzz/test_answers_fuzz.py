"""The answer validator against plain ``jsonschema`` with its format checks.

Schemas come from the gate fuzzer's generator (only those the strict gate accepts); answers
mix near-valid values with random JSON. Invariants: :func:`validate_answer` raises
:class:`InvalidAnswer` or nothing; what it accepts, ``jsonschema`` accepts; what it refuses and
``jsonschema`` accepts is explained by elicitkit's two documented stricter rules (an integer is
an ``int``, not ``30.0``; an email needs ``local@domain.tld``). Patterns (which a client may be
sent) run on RE2 and must agree with Python's ``re`` wherever the two engines mean the same.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

from elicitkit.elicitation.answers import _email, apply_defaults, validate_answer
from elicitkit.elicitation.errors import InvalidAnswer, SchemaError
from elicitkit.elicitation.patterns import search
from elicitkit.elicitation.schema import check_schema

from ._budget import fuzz_settings
from ._strategies import json_values
from .test_schema_gate_fuzz import BASES, schemas

VALUES = st.one_of(
    st.sampled_from(
        ["a", "b", "c", "z", "", "a@b.c", "a@b", "@", "x y@z.w", "2024-01-01", "2024-13-01", "2024-01-01T10:00:00Z",
         "2024-01-01 10:00", "https://example.com/x", "not a uri", "mailto:a@b.c", 0, 1, 5, -1, 30.0, 1.5, True, None]
    ),
    st.lists(st.sampled_from(["a", "b", "c", "z"]), max_size=3),
    json_values,
)  # fmt: skip


SAFE_KEYWORDS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "string": {
        "minLength": st.integers(0, 2),
        "maxLength": st.integers(3, 30),
        "format": st.sampled_from(["email", "uri", "date", "date-time"]),
    },
    "integer": {"minimum": st.integers(-2, 0), "maximum": st.integers(1, 10)},
    "number": {"minimum": st.floats(-2, 0), "maximum": st.floats(0.5, 10)},
    "multi": {"minItems": st.integers(0, 1), "maxItems": st.integers(1, 3)},
    "titled_multi": {"minItems": st.integers(0, 1), "maxItems": st.integers(1, 3)},
}


@st.composite
def valid_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """Schemas the strict gate accepts, built directly (filtering random ones wastes most draws)."""
    properties: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(["f", "g", "h"]), min_size=1, max_size=3, unique=True)):
        kind = draw(st.sampled_from(sorted(BASES)))
        prop = dict(BASES[kind])
        for key, values in SAFE_KEYWORDS.get(kind, {}).items():
            if draw(st.booleans()):
                prop[key] = draw(values)
        if draw(st.integers(0, 2)) == 2:
            prop["default"] = draw(VALUES)
            try:
                check_schema({"type": "object", "properties": {"v": prop}}, "2025-11-25")
            except SchemaError:
                del prop["default"]
        properties[name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = draw(st.lists(st.sampled_from(sorted(properties)), max_size=2, unique=True))
    if required:
        schema["required"] = required
    check_schema(schema, "2025-11-25")
    return schema


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = draw(valid_schemas())
    names = sorted(schema["properties"])
    answer = draw(st.dictionaries(st.sampled_from([*names, "extra"]), VALUES, max_size=4))
    return schema, answer


def explained(schema: dict[str, Any], answer: dict[str, Any]) -> bool:
    """A refusal ``jsonschema`` would not make, from one of elicitkit's documented stricter rules."""
    for name, value in answer.items():
        prop = schema["properties"].get(name, {})
        if prop.get("type") == "integer" and isinstance(value, float):
            return True
        if prop.get("format") == "email" and isinstance(value, str) and not _email(value):
            return True
    return False


@fuzz_settings(250)
@given(cases())
def test_answer_validator_agrees_with_jsonschema(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    schema, answer = case
    reference = Draft202012Validator({**schema, "additionalProperties": False}, format_checker=FormatChecker())
    filled = apply_defaults(schema, answer)
    expected = reference.is_valid(filled)
    try:
        validate_answer(schema, answer)
        ours = True
    except InvalidAnswer as exc:
        assert exc.problems
        ours = False
    event(f"ours={ours} jsonschema={expected}")
    if ours:
        assert expected, ("accepted what jsonschema refuses", schema, answer)
    elif expected:
        assert explained(schema, filled), ("refused what jsonschema accepts, with no documented reason", schema, answer)
        event("stricter by rule")


@fuzz_settings(200)
@given(schemas(), st.one_of(st.dictionaries(st.sampled_from(["f", "g", "h", "x"]), VALUES, max_size=3), json_values))
def test_answer_validation_raises_only_invalid_answer_for_any_schema(schema: Any, answer: Any) -> None:
    """Even for schemas the gate refuses (a direct caller may pass anything): InvalidAnswer or nothing."""
    try:
        validate_answer(schema, answer)
        event("accepted")
    except InvalidAnswer as exc:
        assert exc.problems
        event("InvalidAnswer")


PATTERN_PARTS = [
    "a",
    "b",
    "[ab]",
    "[^a]",
    "\\d",
    "\\w",
    "\\s",
    "x*",
    "(a|b)",
    "(?:ab)+",
    "a{2,3}",
    "\\.",
    "[0-9]+",
    "c?",
]


@fuzz_settings(200)
@given(
    st.lists(st.sampled_from(PATTERN_PARTS), min_size=1, max_size=5),
    st.booleans(),
    st.booleans(),
    st.text(st.sampled_from("ab c.019_xX\t"), max_size=12),
)
def test_patterns_agree_with_python_re_where_both_mean_the_same(
    parts: list[str], start: bool, end: bool, text: str
) -> None:
    pattern = ("^" if start else "") + "".join(parts) + ("$" if end else "")
    expected = re.search(pattern, text, re.ASCII) is not None  # ASCII text without line breaks: same meaning
    assert search(pattern, text) is expected, (pattern, text)
