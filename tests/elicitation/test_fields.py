"""Every rule's problem in plain words (issue 16, point 4), secrets, and patterns in words."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit.elicitation.fields import FieldError, check_form, describe_pattern, form_fields


def field(prop: dict[str, Any], required: bool = False) -> Any:
    return form_fields({"type": "object", "properties": {"x": prop}, "required": ["x"] if required else []})[0]


@pytest.mark.parametrize(
    ("prop", "value", "words"),
    [
        ({"type": "string", "minLength": 3}, "ab", "Too short: use at least 3 characters (this has 2)."),
        ({"type": "string", "maxLength": 1}, "ab", "Too long: use at most 1 character (this has 2)."),
        (
            {"type": "string", "pattern": "^[A-Z]{3}-\\d{3}$"},
            "abc-123",
            "Not in the expected form: 3 capital letters, then “-”, then 3 digits.",
        ),
        ({"type": "string", "pattern": "^x$", "description": "Just an x"}, "y", "Not in the expected form: Just an x."),
        ({"type": "string", "pattern": "(a|b)c"}, "zz", "Not in the form the server expects."),
        ({"type": "string", "format": "email"}, "ada", "Not an email address: write it like name@example.com."),
        (
            {"type": "string", "format": "uri"},
            "example.com",
            "Not a web address: write it in full, like https://example.com/page.",
        ),
        ({"type": "string", "format": "date"}, "31/12/2025", "Not a date: write it like 2025-12-31."),
        (
            {"type": "string", "format": "date-time"},
            "tomorrow",
            "Not a date and time: write it like 2025-12-31T18:30:00Z.",
        ),
        ({"type": "integer", "minimum": 1}, 0, "Too small: use 1 or more."),
        ({"type": "integer", "maximum": 9}, 10, "Too large: use 9 or less."),
        ({"type": "number", "minimum": 0, "maximum": 1}, 2, "Out of range: use a number from 0 to 1."),
        ({"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 1}, [], "Choose at least one."),
        ({"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 2}, ["a"], "Choose at least 2."),
        (
            {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 2},
            ["a", "b", "c"],
            "Too many: choose at most 2 (you chose 3).",
        ),
    ],
)
def test_each_rule_in_plain_words(prop: dict[str, Any], value: Any, words: str) -> None:
    assert field(prop).problems(value) == [words]
    assert "\\\\" not in words and "'" not in words  # no doubled backslashes, no Python reprs


def test_required_and_typed_text() -> None:
    assert field({"type": "string"}, required=True).problems(None) == ["This is required: please answer it."]
    with pytest.raises(FieldError, match=r"Not a whole number: write digits only, like 42\."):
        field({"type": "integer"}).parse("abc")
    with pytest.raises(FieldError, match=r"Answer yes or no\."):
        field({"type": "boolean"}).parse("maybe")


def test_the_whole_form_reports_in_form_order() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "minLength": 2}, "b": {"type": "integer", "minimum": 5}},
        "required": ["a", "b"],
    }
    problems = check_form(schema, {"b": 1, "a": "x"})
    assert list(problems) == ["a", "b"]
    assert problems == {"a": "Too short: use at least 2 characters (this has 1).", "b": "Too small: use 5 or more."}


@pytest.mark.parametrize(
    ("name", "prop", "secret"),
    [
        ("password", {}, True),
        ("apiKey", {}, True),
        ("card_number", {}, True),
        ("x", {"title": "One-time PIN"}, True),
        ("x", {"format": "password"}, True),
        ("nickname", {}, False),
        ("passport_country", {}, False),
    ],
)
def test_secrets_are_recognised(name: str, prop: dict[str, Any], secret: bool) -> None:
    f = form_fields({"type": "object", "properties": {name: {"type": "string", **prop}}})[0]
    assert f.secret is secret


def test_patterns_in_words() -> None:
    assert describe_pattern("^\\d{5}$") == "5 digits"
    assert describe_pattern("^[a-z]+@[a-z]+$") == "1 or more small letters, then “@”, then 1 or more small letters"
    assert describe_pattern("^[A-Z]{2,4}$") == "2 to 4 capital letters"
    assert describe_pattern("[A-Z]") is None  # not anchored: it is a search, not a shape
    assert describe_pattern("^(a|b)$") is None
