"""Answers against the requested schema, ``parse_result`` and the result types (pure, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit.elicitation.answers import apply_defaults, parse_result, validate_answer
from elicitkit.elicitation.errors import InvalidAnswer
from elicitkit.elicitation.results import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationAction,
    ElicitationResult,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "age": {"type": "integer", "minimum": 1, "maximum": 120},
        "score": {"type": "number", "minimum": 0.5, "maximum": 100},
        "nick": {"type": "string", "minLength": 2, "maxLength": 4},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "plan": {"type": "string", "enum": ["free", "pro"]},
        "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["x", "y", "z"]},
            "minItems": 1,
            "maxItems": 2,
        },
        "labels": {"type": "array", "items": {"anyOf": [{"const": "p", "title": "P"}, {"const": "q", "title": "Q"}]}},
        "ok": {"type": "boolean"},
    },
    "required": ["age"],
}


def rejected(content: Any, schema: dict[str, Any] = SCHEMA) -> dict[str | None, str]:
    with pytest.raises(InvalidAnswer) as exc:
        validate_answer(schema, content)
    assert exc.value.problems
    assert str(exc.value).startswith("invalid answer: ")
    return {name: reason for name, reason in exc.value.problems}


def accepted(content: dict[str, Any], schema: dict[str, Any] = SCHEMA) -> dict[str, Any]:
    return validate_answer(schema, content)


# --------------------------------------------------------------------------- types


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("age", True, "expected integer, got bool"),
        ("age", False, "expected integer, got bool"),
        ("age", 30.0, "expected integer, got float"),
        ("age", "30", "expected integer, got str"),
        ("age", None, "expected integer"),
        ("score", "30", "expected number, got str"),
        ("score", True, "expected number, got bool"),
        ("nick", 12, "expected string"),
        ("ok", "true", "expected boolean"),
        ("ok", 1, "expected boolean"),
        ("tags", "x", "expected array"),
    ],
)
def test_wrong_types_are_rejected_with_the_field(field: str, value: Any, fragment: str) -> None:
    content = {"age": 30, field: value}
    problems = rejected(content)
    assert field in problems
    assert fragment in problems[field]


def test_right_types_are_accepted() -> None:
    content = {"age": 30, "score": 95.5, "nick": "Jo", "ok": False}
    assert accepted(content) == content
    assert accepted({"age": 1, "score": 2})["score"] == 2  # an int is a number


# --------------------------------------------------------------------------- formats


@pytest.mark.parametrize(
    ("field", "good", "bad"),
    [
        ("email", "ada@example.com", "not-an-email"),
        ("email", "a.b+c@mail.example.org", "ada@localhost"),
        ("email", "x@y.io", "two@@at.com"),
        ("site", "https://example.com/path?q=1", "not a uri"),
        ("site", "mailto:ada@example.com", "/relative/path"),
        ("day", "2024-02-29", "2023-02-29"),  # leap years are checked
        ("day", "2024-12-31", "2024-02-30"),  # calendar-invalid date
        ("day", "2024-01-01", "2024-13-01"),
        ("day", "1999-09-09", "24-01-01"),
        ("day", "2000-01-31", "2024-01-01T00:00:00Z"),
        ("at", "2024-01-01T10:00:00Z", "2024-01-01"),
        ("at", "2024-02-29T23:59:59+02:00", "2024-01-01T25:00:00Z"),
        ("at", "2024-06-30T12:00:00.5Z", "2023-02-29T10:00:00Z"),
    ],
)
def test_formats(field: str, good: str, bad: str) -> None:
    assert accepted({"age": 1, field: good})[field] == good
    problems = rejected({"age": 1, field: bad})
    assert field in problems and "is not a" in problems[field]


# --------------------------------------------------------------------------- bounds and choices


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("age", 0, "less than the minimum"),
        ("age", 121, "greater than the maximum"),
        ("score", 0.25, "less than the minimum"),
        ("score", 100.5, "greater than the maximum"),
        ("nick", "J", "too short"),
        ("nick", "Jonas", "too long"),
        ("code", "abc", "does not match"),
        ("code", "ABCD", "does not match"),
        ("plan", "enterprise", "is not one of"),
        ("plan", "Pro", "is not one of"),
        ("legacy", "A", "is not one of"),  # a label is not a value
        ("size", "Small", "not one of the offered choices"),  # a title is not a const
        ("size", "m", "not one of the offered choices"),
        ("tags", [], "non-empty"),
        ("tags", ["x", "y", "z"], "too long"),
        ("tags", ["w"], "is not one of"),
        ("tags", [1], "is not"),
        ("labels", ["P"], "not one of the offered choices"),
        ("labels", ["r"], "not one of the offered choices"),
    ],
)
def test_bounds_lengths_patterns_and_membership(field: str, value: Any, fragment: str) -> None:
    problems = rejected({"age": 30, field: value})
    assert field in problems, problems
    assert fragment in problems[field]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("age", 1),
        ("age", 120),
        ("score", 0.5),
        ("nick", "Jo"),
        ("nick", "Jona"),
        ("code", "ABC"),
        ("plan", "pro"),
        ("legacy", "b"),
        ("size", "l"),
        ("tags", ["x"]),
        ("tags", ["x", "z"]),
        ("labels", []),
        ("labels", ["p", "q"]),
    ],
)
def test_values_within_the_rules_are_accepted(field: str, value: Any) -> None:
    content = {"age": 30, field: value}
    assert accepted(content) == content


def test_required_fields() -> None:
    problems = rejected({"nick": "Jo"})
    assert problems == {"age": "required field is missing"}


def test_unknown_fields_are_rejected() -> None:
    assert rejected({"age": 30, "extra": 1}) == {"extra": "unknown field(s): extra"}
    problems = rejected({"age": 30, "one": 1, "two": 2})
    assert "one" in problems[None] and "two" in problems[None]


def test_every_problem_is_reported() -> None:
    problems = rejected({"age": True, "plan": "nope", "nick": "J"})
    assert set(problems) == {"age", "plan", "nick"}


def test_content_must_be_an_object() -> None:
    not_objects: tuple[Any, ...] = (None, [], "age=3", 3)
    for content in not_objects:
        assert None in rejected(content)


def test_invalid_answer_keeps_the_answer_and_a_reason() -> None:
    with pytest.raises(InvalidAnswer) as exc:
        validate_answer(SCHEMA, {"age": "x"})
    assert exc.value.answer == {"age": "x"}
    assert exc.value.reason.startswith("age: expected integer")
    assert isinstance(exc.value, ValueError)


# --------------------------------------------------------------------------- defaults

DEFAULTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "default": ["a"]},
        "plain": {"type": "string"},
    },
}


def test_defaults_fill_only_omitted_fields() -> None:
    filled = validate_answer(DEFAULTS, {})
    assert filled == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
        "tags": ["a"],
    }
    assert type(filled["age"]) is int and type(filled["score"]) is float
    given = {"name": "Ada", "verified": False, "tags": [], "age": 0}
    filled = validate_answer(DEFAULTS, given)
    assert filled["name"] == "Ada" and filled["verified"] is False and filled["tags"] == [] and filled["age"] == 0
    assert filled["score"] == 95.5
    assert "plain" not in filled
    assert given == {"name": "Ada", "verified": False, "tags": [], "age": 0}  # input untouched


def test_an_explicit_bad_value_is_not_replaced_by_the_default() -> None:
    problems = rejected({"age": None}, DEFAULTS)
    assert "age" in problems


def test_apply_defaults_alone_and_without_filling() -> None:
    assert apply_defaults(DEFAULTS, {"plain": "p"})["age"] == 30
    assert apply_defaults({"type": "object", "properties": {}}, {"x": 1}) == {"x": 1}
    assert validate_answer(DEFAULTS, {}, fill_defaults=False) == {}


def test_defaults_satisfy_required() -> None:
    schema = {**DEFAULTS, "required": ["name", "age"]}
    assert validate_answer(schema, {})["name"] == "John Doe"


# --------------------------------------------------------------------------- parse_result


def test_parse_result_accept_validates_and_fills_defaults() -> None:
    outcome = parse_result({"action": "accept", "content": {"name": "Ada"}}, mode="form", schema=DEFAULTS)
    assert isinstance(outcome, AcceptedElicitation)
    assert outcome.content == outcome.data
    assert outcome.content is not None and outcome.content["name"] == "Ada" and outcome.content["age"] == 30


def test_parse_result_accept_with_invalid_content_raises() -> None:
    with pytest.raises(InvalidAnswer, match="age"):
        parse_result({"action": "accept", "content": {"age": "thirty"}}, mode="form", schema=DEFAULTS)
    with pytest.raises(InvalidAnswer, match="required"):
        parse_result({"action": "accept"}, mode="form", schema=SCHEMA)  # accept without content
    with pytest.raises(InvalidAnswer, match="no schema"):
        parse_result({"action": "accept", "content": {}}, mode="form", schema=None)


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_parse_result_content_on_decline_or_cancel_is_rejected(action: str) -> None:
    with pytest.raises(InvalidAnswer, match=f"a {action} carries no content"):
        parse_result({"action": action, "content": {"age": 3}}, mode="form", schema=SCHEMA)


def test_parse_result_decline_and_cancel() -> None:
    declined = parse_result({"action": "decline"}, mode="form", schema=SCHEMA)
    cancelled = parse_result({"action": "cancel", "_meta": {"x": 1}}, mode="form", schema=SCHEMA)
    assert isinstance(declined, DeclinedElicitation)
    assert isinstance(cancelled, CancelledElicitation)
    assert isinstance(parse_result({"action": "decline"}, mode="url"), DeclinedElicitation)


def test_parse_result_url_accept_has_no_content() -> None:
    outcome = parse_result({"action": "accept"}, mode="url")
    assert isinstance(outcome, AcceptedElicitation)
    assert outcome.data is None and outcome.content is None
    for content in ({"done": True}, {}):
        with pytest.raises(InvalidAnswer, match="URL-mode accept carries no content"):
            parse_result({"action": "accept", "content": content}, mode="url")


@pytest.mark.parametrize("action", ["ACCEPT", "ok", "", None, 1, "declined"])
def test_parse_result_unknown_action(action: Any) -> None:
    with pytest.raises(InvalidAnswer, match="unknown action"):
        parse_result({"action": action}, mode="form", schema=SCHEMA)
    with pytest.raises(InvalidAnswer, match="unknown action"):
        parse_result({}, mode="form", schema=SCHEMA)


@pytest.mark.parametrize("raw", [None, "accept", ["accept"], 1, True])
def test_parse_result_non_object(raw: Any) -> None:
    with pytest.raises(InvalidAnswer, match="must be an object"):
        parse_result(raw, mode="form", schema=SCHEMA)


# --------------------------------------------------------------------------- result types


def test_factories_and_wire_forms() -> None:
    accepted_ = ElicitationResult.accept({"age": 3})
    assert isinstance(accepted_, AcceptedElicitation)
    assert accepted_.data == {"age": 3} and accepted_.content == {"age": 3}
    assert accepted_.to_wire() == accepted_.to_dict() == {"action": "accept", "content": {"age": 3}}
    typed = ElicitationResult.accept({"value": 3}, data=3)
    assert typed.data == 3 and typed.to_wire() == {"action": "accept", "content": {"value": 3}}
    consent = ElicitationResult.accept()
    assert consent.to_wire() == {"action": "accept"}
    assert ElicitationResult.cancel().to_wire() == ElicitationResult.cancel().to_dict() == {"action": "cancel"}
    assert ElicitationResult.decline().to_dict() == {"action": "decline"}


def test_decline_reason_is_local_only() -> None:
    declined = ElicitationResult.decline("too personal")
    assert isinstance(declined, DeclinedElicitation)
    assert declined.reason == declined.validation_error == "too personal"
    assert declined.to_wire() == {"action": "decline"}
    assert declined.to_dict() == {"action": "decline", "validationError": "too personal"}


def test_action_is_a_string_enum() -> None:
    outcomes: list[ElicitationResult[Any]] = [
        ElicitationResult.accept({}),
        ElicitationResult.decline(),
        ElicitationResult.cancel(),
    ]
    for outcome, name in zip(outcomes, ("accept", "decline", "cancel"), strict=True):
        assert outcome.action == name
        assert outcome.action.value == name
        assert isinstance(outcome.action, ElicitationAction)
        assert isinstance(outcome, ElicitationResult)
        assert outcome.accepted is (name == "accept")
    assert ElicitationResult.decline().content is None and ElicitationResult.cancel().content is None


def describe(outcome: ElicitationResult[Any]) -> str:
    match outcome:
        case AcceptedElicitation(data=data):
            return f"got {data}"
        case DeclinedElicitation(reason=reason):
            return f"declined ({reason})"
        case CancelledElicitation():
            return "cancelled"
    return "unreachable"


def test_pattern_matching_on_the_three_outcomes() -> None:
    assert describe(ElicitationResult.accept({"a": 1})) == "got {'a': 1}"
    assert describe(ElicitationResult.decline("no")) == "declined (no)"
    assert describe(ElicitationResult.cancel()) == "cancelled"
    assert describe(parse_result({"action": "cancel"}, mode="url")) == "cancelled"


def test_results_are_frozen_values() -> None:
    assert ElicitationResult.accept({"a": 1}) == AcceptedElicitation(data={"a": 1}, content={"a": 1})
    assert ElicitationResult.cancel() == CancelledElicitation()
    with pytest.raises(AttributeError):
        ElicitationResult.decline("x").reason = "y"  # type: ignore[misc]


# --------------------------------------------------------------------------- issue 12: nothing stalls, nothing leaks

REDOS = {"type": "object", "properties": {"v": {"type": "string", "pattern": "^(a+)+$"}}}


@pytest.mark.timeout(5)
@pytest.mark.parametrize("length", [24, 40, 100_000])
def test_defect_03_redos_pattern_is_judged_at_once(length: int) -> None:
    """``^(a+)+$`` against ``"a" * 24 + "!"`` took 1.6 s in Python's re (x4 per two characters)."""
    problems = rejected({"v": "a" * length + "!"}, REDOS)
    assert "does not match" in problems["v"]
    assert accepted({"v": "a" * length}, REDOS) == {"v": "a" * length}


@pytest.mark.timeout(5)
def test_defect_03_a_value_too_long_for_its_pattern_budget_is_refused_not_searched() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": "(?:a|b)*a(?:a|b){500}c"}}}
    problems = rejected({"v": "ab" * 1_000_000}, schema)
    assert "too long to check against this pattern" in problems["v"]


@pytest.mark.timeout(5)
@pytest.mark.parametrize(
    "value", ["a@" + "." * 200_000 + "@", "a@" + "." * 200_000 + "\n", "a@" + "a." * 100_000 + " "]
)
def test_defect_email_format_check_is_linear(value: str) -> None:
    """New (fuzzing): the email regex backtracked quadratically: 16,000 dots took 4.9 s."""
    schema = {"type": "object", "properties": {"e": {"type": "string", "format": "email"}}}
    assert "e" in rejected({"e": value}, schema)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a@b.c", True),
        ("a.b@c.d.e", True),
        ("a@b..c", True),
        ("a@.c", False),
        ("a@b.", False),
        ("a@bc", False),
        ("@b.c", False),
        ("a@b@c.d", False),
        ("a b@c.d", False),
        ("a@c.d\u00a0", False),
        ("", False),
    ],
)
def test_email_check_keeps_its_meaning(value: str, ok: bool) -> None:
    schema = {"type": "object", "properties": {"e": {"type": "string", "format": "email"}}}
    if ok:
        assert accepted({"e": value}, schema) == {"e": value}
    else:
        assert "e" in rejected({"e": value}, schema)


ODD_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {"v": {"type": "array", "items": {"type": "string", "enum": ["a"], "$ref": "#/x"}}},
    },
    {"type": "object", "properties": {"v": {"type": "string", "$dynamicRef": "#nowhere"}}},
    {"type": "object", "properties": {"v": {"$ref": "https://example.com/remote.json"}}},
    {"type": "object", "properties": {"v": {"type": "string", "pattern": "(?=a)"}}},
    {"type": "object", "properties": {"v": {"type": "string", "pattern": 5}}},
    {"type": "object", "properties": {"v": {"type": "string", "pattern": "("}}},
    {"type": "object", "properties": {"v": {"type": "integer", "minimum": "x"}}},
    {"type": "object", "properties": {"v": {"type": "string", "format": "email", "maxLength": "x"}}},
    {"type": "object", "properties": ["v"]},
    {"type": "object", "properties": {"v": {"type": "string"}}, "required": "v"},
]


@pytest.mark.parametrize("schema", ODD_SCHEMAS)
@pytest.mark.parametrize("content", [{"v": ["a"]}, {"v": "a"}, {"v": 1}, {}])
def test_defect_01_answer_validation_raises_nothing_but_invalid_answer(schema: dict[str, Any], content: Any) -> None:
    """With ``$ref`` in items the tool got "PointerToNowhere" and the client answered -32603."""
    try:
        validate_answer(schema, content)
    except InvalidAnswer as exc:
        assert exc.problems
    try:
        parse_result({"action": "accept", "content": content}, mode="form", schema=schema)
    except InvalidAnswer as exc:
        assert exc.problems


def test_defect_01_ref_in_items_answer_is_an_invalid_answer_naming_the_schema() -> None:
    with pytest.raises(InvalidAnswer, match="schema cannot be evaluated"):
        validate_answer(ODD_SCHEMAS[0], {"v": ["a"]})


def test_problems_quote_huge_values_briefly() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "integer"}, "w": {"type": "string", "maxLength": 1}}}
    with pytest.raises(InvalidAnswer) as exc:
        validate_answer(schema, {"v": "x" * 1_000_000, "w": "y" * 1_000_000})
    assert len(str(exc.value)) < 2_000
