"""The schema gate against the spec's own ``requestedSchema``, era by era.

Schemas are generated near the subset (each kind of field, then keywords added, dropped or
given odd values) and judged three ways: the strict gate, the lenient gate, and validation
against the spec's sub-schema (:mod:`.spec_requested_schema`). Invariants:

* the gate raises :class:`SchemaError` or nothing, whatever it is given;
* strict accepts => the spec's schema accepts (the gate is never wider than the spec);
* the spec accepts and the schema is meaningful (:func:`meaningful`: what JSON Schema cannot
  say, such as "no duplicate choices" or "the default fits its field") => strict accepts;
* strict accepts => lenient accepts.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

from elicitkit.elicitation.errors import SchemaError
from elicitkit.elicitation.schema import check_schema

from ._budget import fuzz_settings
from ._strategies import json_values
from .spec_requested_schema import REQUESTED_SCHEMA

ERAS = ("2025-06-18", "2025-11-25", "2026-07-28")
SPEC = {era: Draft202012Validator(schema) for era, schema in REQUESTED_SCHEMA.items()}
CHOICES = ["a", "b", "c"]

BASES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "enum": {"type": "string", "enum": ["a", "b"]},
    "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
    "titled": {"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]},
    "multi": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    "titled_multi": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}},
}

counts = st.one_of(st.integers(0, 4), st.integers(-1, 4), st.floats(0, 3), st.booleans(), st.just("2"))
numbers = st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False), st.booleans(), st.just("1"))
texts = st.one_of(st.sampled_from(["", "T", "x"]), st.text(max_size=5), st.integers(0, 3))
choice_lists = st.one_of(
    st.lists(st.sampled_from(CHOICES), max_size=3), st.lists(st.integers(0, 2), max_size=2), st.just("a")
)
options = st.lists(
    st.fixed_dictionaries(
        {"const": st.sampled_from(CHOICES) | st.integers(0, 1), "title": st.sampled_from(["A", "B"]) | st.none()},
        optional={"description": texts, "x-o": st.just(1), "$ref": st.just("#/x")},
    ),
    max_size=3,
)
items = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "string", "integer"]), "enum": choice_lists},
        optional={
            "title": texts,
            "pattern": st.just("^a"),
            "$ref": st.just("#/x"),
            "minLength": counts,
            "not": st.just({}),
        },
    ),
    st.fixed_dictionaries(
        {"anyOf": options},
        optional={"title": texts, "$dynamicRef": st.just("#x"), "allOf": st.just([{}]), "x-i": st.just(1)},
    ),
    json_values,
)
defaults = st.one_of(
    st.sampled_from(["a", "b", "z", "", "a@b.c", "x", "2024-01-01", "https://example.com", 0, 1, 1.5, 7, True, False]),
    st.lists(st.sampled_from([*CHOICES, "z"]), max_size=3),
    json_values,
)
KEYWORD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "type": st.sampled_from(["string", "integer", "number", "boolean", "array", "object", "null"]),
    "title": texts,
    "description": texts,
    "minLength": counts,
    "maxLength": counts,
    "minItems": counts,
    "maxItems": counts,
    "minimum": numbers,
    "maximum": numbers,
    "format": st.sampled_from(["email", "uri", "date", "date-time", "ipv4", 3]),
    "enum": choice_lists,
    "enumNames": st.lists(st.sampled_from(["A", "B", "C"]), max_size=3) | st.just([1]),
    "oneOf": options,
    "items": items,
    "default": defaults,
    "pattern": st.sampled_from(["^a", "(?=a)", 5]),
    "$ref": st.just("#/$defs/x"),
    "$dynamicRef": st.just("#x"),
    "not": st.just({"enum": ["a"]}),
    "allOf": st.just([{}]),
    "anyOf": options,
    "const": st.just("a"),
    "exclusiveMinimum": numbers,
    "uniqueItems": st.booleans(),
    "properties": st.just({}),
    "examples": st.just(["a"]),
    "x-foo": json_values,
}
SPEC_KEYWORDS = ["title", "description", "minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum",
                 "format", "default", "enumNames"]  # fmt: skip
ROOT_EXTRAS: dict[str, st.SearchStrategy[Any]] = {
    "$schema": st.sampled_from(["https://json-schema.org/draft/2020-12/schema", 5]),
    "title": texts,
    "description": texts,
    "$defs": st.just({}),
    "additionalProperties": st.booleans(),
    "x-foo": st.just(1),
}


@st.composite
def fields(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 30)) == 30:
        return draw(json_values)
    prop = dict(BASES[draw(st.sampled_from(sorted(BASES)))])
    if draw(st.integers(0, 5)) == 5:
        del prop[draw(st.sampled_from(sorted(prop)))]
    common = st.sampled_from(sorted(SPEC_KEYWORDS))  # mostly keywords some kind allows: more verdicts "yes"
    for key in draw(st.lists(common | common | st.sampled_from(sorted(KEYWORD_VALUES)), max_size=2, unique=True)):
        prop[key] = draw(KEYWORD_VALUES[key])
    return prop


@st.composite
def schemas(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 40)) == 40:
        return draw(json_values)
    properties = draw(st.dictionaries(st.sampled_from(["f", "g", "h"]), fields(), max_size=3))
    schema: dict[str, Any] = {
        "type": "string" if draw(st.integers(0, 20)) == 20 else "object",
        "properties": properties,
    }
    if draw(st.booleans()):
        names = [*sorted(properties), "ghost"]
        listed = st.lists(st.sampled_from(names), max_size=2, unique=True)
        schema["required"] = draw(listed | listed | listed | st.just("f"))
    if draw(st.integers(0, 3)) == 3:
        key = draw(st.sampled_from(sorted(ROOT_EXTRAS)))
        schema[key] = draw(ROOT_EXTRAS[key])
    return schema


# ----------------------------------------------------------------------------- what JSON Schema cannot say


def _count_ok(value: Any) -> bool:
    return value is None or (type(value) is int and value >= 0)


def _number_ok(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _ordered(low: Any, high: Any) -> bool:
    return low is None or high is None or low <= high


def _distinct_non_empty(values: Any) -> bool:
    return isinstance(values, list) and bool(values) and len(set(values)) == len(values)


def _default_fits(prop: dict[str, Any]) -> bool:
    """The default satisfies its own field (jsonschema, plus: an integer default is an int)."""
    value = prop["default"]
    if prop.get("type") == "integer" and type(value) is not int:
        return False
    if prop.get("format") == "email" and isinstance(value, str) and value not in ("a@b.c",):
        return False  # the pool's other strings are no emails by elicitkit's (stricter) rule
    field = {k: v for k, v in prop.items() if k not in ("default", "enumNames")}
    if "items" in field and "anyOf" in field["items"]:
        field["items"] = {"enum": [o["const"] for o in field["items"]["anyOf"]]}
    if "oneOf" in field:
        field["enum"] = [o["const"] for o in field.pop("oneOf")]
    return Draft202012Validator(field, format_checker=FormatChecker()).is_valid(value)


def meaningful(schema: dict[str, Any]) -> bool:
    """The gate's rules beyond the spec's schema, written again independently of the gate."""
    properties = schema["properties"]
    if any(name not in properties for name in schema.get("required", [])):
        return False
    for prop in properties.values():
        if not all(_count_ok(prop.get(k)) for k in ("minLength", "maxLength", "minItems", "maxItems")):
            return False
        if not all(_number_ok(prop.get(k)) for k in ("minimum", "maximum")):
            return False
        pairs = (("minLength", "maxLength"), ("minItems", "maxItems"), ("minimum", "maximum"))
        if not all(_ordered(prop.get(low), prop.get(high)) for low, high in pairs):
            return False
        if "enum" in prop and not _distinct_non_empty(prop["enum"]):
            return False
        if "enumNames" in prop and (
            not _distinct_non_empty(prop["enumNames"]) or len(prop["enumNames"]) != len(prop["enum"])
        ):
            return False
        options = prop.get("oneOf", prop.get("items", {}).get("anyOf"))
        if options is not None and not _distinct_non_empty([o["const"] for o in options]):
            return False
        item_enum = prop.get("items", {}).get("enum")
        if item_enum is not None and not _distinct_non_empty(item_enum):
            return False
        if "default" in prop and not _default_fits(prop):
            return False
    return True


def verdict(schema: Any, era: str, strict: bool) -> bool:
    try:
        check_schema(schema, era, strict=strict)
    except SchemaError as exc:
        assert exc.problems and all(isinstance(reason, str) for _, reason in exc.problems)
        return False
    return True


@fuzz_settings(250)
@pytest.mark.parametrize("era", ERAS)
@given(schema=schemas())
def test_gate_agrees_with_the_spec_schema_of_each_era(era: str, schema: Any) -> None:
    strict = verdict(schema, era, strict=True)
    lenient = verdict(schema, era, strict=False)
    spec = SPEC[era].is_valid(schema)
    event(f"{era}: strict={strict} spec={spec}")
    if strict:
        assert spec, ("the gate let through what the spec's schema refuses", era, schema)
        assert lenient, ("the lenient gate refused what the strict one accepts", era, schema)
    elif spec:
        assert not meaningful(schema), ("the gate refused a meaningful spec-valid schema", era, schema)
