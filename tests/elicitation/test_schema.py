"""Python types -> ``requestedSchema`` and the schema gate (pure, no I/O).

Covers the five enum shapes, SEP-1034 defaults, optional fields, annotations, formats, scalar
shorthands, every rejection of the gate (each naming the offending field), strict vs lenient
gating and down-conversion for 2025-06-18 clients.
"""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import AnyUrl, BaseModel, Field

from elicitkit.elicitation.enums import LEGACY_ENUM_NAMES, Format, TitledEnum, Titles
from elicitkit.elicitation.errors import SchemaError
from elicitkit.elicitation.schema import Form, check_schema, for_version, form_for, form_from_schema

OLD = "2025-06-18"
NEW = "2025-11-25"


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Size(TitledEnum):
    SMALL = "s", "Small (8 inch)"
    LARGE = "l", "Large (12 inch)"


class Mood(enum.Enum):  # not a string enum: cannot be a choice
    HAPPY = 1
    SAD = 2


def prop(model: Any, name: str) -> dict[str, Any]:
    return form_for(model).schema["properties"][name]  # type: ignore[no-any-return]


def schema_of(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def problems_of(exc: pytest.ExceptionInfo[SchemaError]) -> dict[str | None, str]:
    return {name: reason for name, reason in exc.value.problems}


# --------------------------------------------------------------------------- enum shapes


class Shapes(BaseModel):
    literal: Literal["x", "y"]
    plain_enum: Color
    titled_enum: Size
    titled_literal: Annotated[Literal["p", "q"], Titles(p="Pepperoni", q="Quattro")]
    multi: Annotated[list[Literal["u", "v", "w"]], Field(min_length=1, max_length=2)]
    multi_enum: list[Color]
    titled_multi: Annotated[list[Literal["u", "v"]], Titles(u="Up", v="Vee")]
    titled_multi_enum: list[Size]
    legacy: Annotated[Size, LEGACY_ENUM_NAMES]
    legacy_literal: Annotated[Literal["a", "b"], Titles(a="Alpha"), LEGACY_ENUM_NAMES]


def test_untitled_single_from_literal_and_enum() -> None:
    assert prop(Shapes, "literal") == {"type": "string", "enum": ["x", "y"], "title": "Literal"}
    assert prop(Shapes, "plain_enum") == {"type": "string", "enum": ["red", "green"], "title": "Plain enum"}


def test_titled_single_from_titled_enum_has_one_of_and_no_enum() -> None:
    field = prop(Shapes, "titled_enum")
    assert field["type"] == "string"
    assert field["oneOf"] == [{"const": "s", "title": "Small (8 inch)"}, {"const": "l", "title": "Large (12 inch)"}]
    assert "enum" not in field and "enumNames" not in field


def test_titled_single_from_annotated_literal_titles() -> None:
    field = prop(Shapes, "titled_literal")
    assert field["oneOf"] == [{"const": "p", "title": "Pepperoni"}, {"const": "q", "title": "Quattro"}]
    assert "enum" not in field


def test_untitled_multi_with_item_bounds_from_field_lengths() -> None:
    assert prop(Shapes, "multi") == {
        "type": "array",
        "items": {"type": "string", "enum": ["u", "v", "w"]},
        "minItems": 1,
        "maxItems": 2,
        "title": "Multi",
    }
    assert prop(Shapes, "multi_enum")["items"] == {"type": "string", "enum": ["red", "green"]}


def test_titled_multi_uses_items_any_of_without_items_enum() -> None:
    for name, options in [
        ("titled_multi", [{"const": "u", "title": "Up"}, {"const": "v", "title": "Vee"}]),
        ("titled_multi_enum", [{"const": "s", "title": "Small (8 inch)"}, {"const": "l", "title": "Large (12 inch)"}]),
    ]:
        field = prop(Shapes, name)
        assert field["type"] == "array"
        assert field["items"] == {"anyOf": options}
        assert "enum" not in field["items"]


def test_legacy_enum_names_marker_renders_enum_plus_enum_names() -> None:
    field = prop(Shapes, "legacy")
    assert field["enum"] == ["s", "l"]
    assert field["enumNames"] == ["Small (8 inch)", "Large (12 inch)"]
    assert "oneOf" not in field
    partly = prop(Shapes, "legacy_literal")
    assert partly["enum"] == ["a", "b"]
    assert partly["enumNames"] == ["Alpha", "b"]  # an untitled option is labelled by its value


def test_every_shape_passes_the_gate_and_all_fields_are_required() -> None:
    schema = form_for(Shapes).schema
    check_schema(schema, NEW, strict=True)
    assert schema["required"] == list(Shapes.model_fields)


def test_titled_enum_members_compare_as_strings() -> None:
    assert isinstance(Size.SMALL, str) and Size("s") is Size.SMALL and f"{Size.SMALL}" == "s"
    assert Size.SMALL.label == "Small (8 inch)"

    class Bare(TitledEnum):
        ONLY = "only"

    assert Bare.ONLY.label == "only"


# --------------------------------------------------------------------------- defaults, optional


def _default_tags() -> list[Literal["a", "b", "c"]]:
    return ["a", "c"]


class Defaults(BaseModel):
    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    verified: bool = True
    status: Literal["active", "inactive"] = "active"
    size: Size = Size.LARGE
    color: Color = Color.GREEN
    tags: list[Literal["a", "b", "c"]] = Field(default_factory=_default_tags)
    titled_tags: list[Size] = [Size.SMALL]
    when: datetime.date = datetime.date(2024, 2, 29)


@pytest.mark.parametrize(
    ("name", "default"),
    [
        ("name", "John Doe"),
        ("age", 30),
        ("score", 95.5),
        ("verified", True),
        ("status", "active"),
        ("size", "l"),
        ("color", "green"),
        ("tags", ["a", "c"]),
        ("titled_tags", ["s"]),
        ("when", "2024-02-29"),
    ],
)
def test_default_on_every_primitive_is_rendered_as_json(name: str, default: Any) -> None:
    field = prop(Defaults, name)
    assert field["default"] == default
    assert type(field["default"]) is type(default)  # 30 stays int, enums become their str value


def test_fields_with_defaults_are_not_required_and_pass_the_gate() -> None:
    schema = form_for(Defaults).schema
    assert "required" not in schema
    check_schema(schema, NEW)


class Optionals(BaseModel):
    nickname: Optional[str] = None  # noqa: UP045 - the spelling under test
    motto: str | None = None
    floor: int | None = 3
    must_answer_or_null: str | None
    needed: str


def test_optional_is_not_required_and_none_default_is_dropped() -> None:
    schema = form_for(Optionals).schema
    assert schema["required"] == ["needed"]
    assert schema["properties"]["nickname"] == {"type": "string", "title": "Nickname"}
    assert schema["properties"]["motto"] == {"type": "string", "title": "Motto"}
    assert schema["properties"]["floor"]["default"] == 3
    assert "default" not in schema["properties"]["must_answer_or_null"]


def test_optional_fields_parse_to_none_when_omitted() -> None:
    parsed = form_for(Optionals).parse({"needed": "yes"})
    assert isinstance(parsed, Optionals)
    assert parsed.nickname is None and parsed.must_answer_or_null is None and parsed.floor == 3


# --------------------------------------------------------------------------- annotations, formats


class Described(BaseModel):
    plain_name: str
    titled: str = Field(title="Custom title", description="Shown under the field")
    described: Annotated[int, Field(description="How many", ge=1, le=9)]
    bounded: Annotated[str, Field(min_length=2, max_length=5)]  # no pattern: no spec version has one
    ratio: Annotated[float, Field(ge=0.0, le=1.0)]


def test_titles_default_to_the_field_name_and_descriptions_are_kept() -> None:
    assert prop(Described, "plain_name")["title"] == "Plain name"  # sentence case (issue 16, point 11)
    titled = prop(Described, "titled")
    assert titled["title"] == "Custom title"
    assert titled["description"] == "Shown under the field"
    assert prop(Described, "described") == {
        "type": "integer",
        "minimum": 1,
        "maximum": 9,
        "title": "Described",
        "description": "How many",
    }
    assert prop(Described, "bounded") == {
        "type": "string",
        "minLength": 2,
        "maxLength": 5,
        "title": "Bounded",
    }
    assert prop(Described, "ratio")["minimum"] == 0.0 and prop(Described, "ratio")["maximum"] == 1.0


class Formats(BaseModel):
    birthday: datetime.date
    meeting: datetime.datetime
    homepage: AnyUrl
    email: Annotated[str, Format("email")]
    link: Annotated[str, Format("uri")]


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("birthday", "date"), ("meeting", "date-time"), ("homepage", "uri"), ("email", "email"), ("link", "uri")],
)
def test_formats_from_types_and_format_marker(name: str, fmt: str) -> None:
    field = prop(Formats, name)
    assert field["type"] == "string"
    assert field["format"] == fmt


def test_format_fields_parse_back_to_python_values() -> None:
    parsed = form_for(Formats).parse(
        {
            "birthday": "2024-02-29",
            "meeting": "2024-03-01T10:30:00Z",
            "homepage": "https://example.com/x",
            "email": "a@example.com",
            "link": "https://example.org",
        }
    )
    assert parsed.birthday == datetime.date(2024, 2, 29)
    assert parsed.meeting.hour == 10
    assert str(parsed.homepage) == "https://example.com/x"


# --------------------------------------------------------------------------- scalar shorthands


@pytest.mark.parametrize(
    ("shorthand", "expected", "answer", "parsed"),
    [
        (bool, {"type": "boolean"}, True, True),
        (int, {"type": "integer"}, 7, 7),
        (float, {"type": "number"}, 2.5, 2.5),
        (str, {"type": "string"}, "hi", "hi"),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}, "b", "b"),
        (Color, {"type": "string", "enum": ["red", "green"]}, "red", Color.RED),
        (
            Size,
            {
                "type": "string",
                "oneOf": [{"const": "s", "title": "Small (8 inch)"}, {"const": "l", "title": "Large (12 inch)"}],
            },
            "l",
            Size.LARGE,
        ),
        (
            list[Literal["a", "b"]],
            {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            ["a", "b"],
            ["a", "b"],
        ),
    ],
)
def test_scalar_shorthand_is_one_required_field_named_value(
    shorthand: Any, expected: dict[str, Any], answer: Any, parsed: Any
) -> None:
    form = form_for(shorthand)
    assert isinstance(form, Form)
    assert form.scalar
    assert form.schema == {
        "type": "object",
        "properties": {"value": {**expected, "title": "Value"}},
        "required": ["value"],
    }
    result = form.parse({"value": answer})
    assert result == parsed
    assert type(result) is type(parsed)


def test_model_form_parses_to_the_model() -> None:
    form = form_for(Shapes)
    assert not form.scalar
    value = form.parse(
        {
            "literal": "x",
            "plain_enum": "red",
            "titled_enum": "s",
            "titled_literal": "q",
            "multi": ["u"],
            "multi_enum": [],
            "titled_multi": ["v"],
            "titled_multi_enum": ["l"],
            "legacy": "l",
            "legacy_literal": "a",
        }
    )
    assert isinstance(value, Shapes)
    assert value.titled_enum is Size.SMALL and value.titled_multi_enum == [Size.LARGE]


def test_form_for_is_memoized_per_type() -> None:
    assert form_for(Shapes) is form_for(Shapes)


def test_form_from_schema_keeps_answers_as_dicts() -> None:
    schema = schema_of(city={"type": "string"})
    form = form_from_schema(schema)
    assert form.model is None and form.schema is schema
    assert form.parse({"city": "Oslo"}) == {"city": "Oslo"}
    with pytest.raises(SchemaError):
        form_from_schema(schema_of(city={"type": "object", "properties": {}}))


# --------------------------------------------------------------------------- type rejections


class Inner(BaseModel):
    street: str


def _model(annotation: Any, default: Any = ...) -> type[BaseModel]:
    namespace: dict[str, Any] = {"__annotations__": {"bad_field": annotation}}
    if default is not ...:
        namespace["bad_field"] = default
    return type("Bad", (BaseModel,), namespace)


@pytest.mark.parametrize(
    ("annotation", "default", "fragment"),
    [
        (Inner, ..., "nested model Inner"),
        (int | str, ..., "unions"),
        (dict[str, str], ..., "not a form primitive"),
        (list[int], ..., "multi-select"),
        (list[str], ..., "multi-select"),
        (Annotated[int, Field(gt=1)], ..., "gt/lt"),
        (Annotated[float, Field(lt=1)], ..., "gt/lt"),
        (Annotated[int, Field(multiple_of=2)], ..., "multiple_of"),
        (Annotated[str, Format("ipv4")], ..., "format 'ipv4'"),
        (Annotated[int, Format("email")], ..., "plain string fields only"),
        (Literal[1, 2], ..., "must all be strings"),
        (Annotated[int, Field(ge=10)], 5, "default 5 is invalid"),
        (Annotated[str, Field(min_length=3)], "ab", "default 'ab' is invalid"),
        (Literal["a", "b"], "c", "default 'c' is invalid"),
        (Annotated[int, Field(ge=10, le=1)], ..., "greater than"),
    ],
)
def test_form_for_rejects_with_the_field_named(annotation: Any, default: Any, fragment: str) -> None:
    with pytest.raises(SchemaError) as exc:
        form_for(_model(annotation, default))
    found = problems_of(exc)
    assert list(found) == ["bad_field"], exc.value.problems
    assert fragment in found["bad_field"]
    assert "bad_field" in str(exc.value)


def test_form_for_reports_every_bad_field_at_once() -> None:
    class Many(BaseModel):
        ok: str
        nested: Inner
        mapping: dict[str, int]

    with pytest.raises(SchemaError) as exc:
        form_for(Many)
    assert set(problems_of(exc)) == {"nested", "mapping"}


def test_non_string_enum_type_is_a_schema_error_naming_the_field() -> None:
    with pytest.raises(SchemaError) as exc:
        form_for(_model(Mood))
    assert "bad_field" in problems_of(exc)


def test_non_string_enum_type_is_refused() -> None:
    with pytest.raises(TypeError, match="non-string value"):
        form_for(_model(Mood))


def test_form_for_refuses_a_non_type() -> None:
    with pytest.raises(SchemaError):
        form_for(object())


# --------------------------------------------------------------------------- the gate on dicts


@pytest.mark.parametrize(
    ("schema", "field", "fragment"),
    [
        (schema_of(a={"$ref": "#/$defs/x"}), "a", "$ref"),
        (schema_of(a={"type": "string", "$ref": "#/$defs/x"}), "a", "'$ref'"),
        ({**schema_of(a={"type": "string"}), "$defs": {}}, None, "'$defs'"),
        (schema_of(a={"type": "string", "allOf": [{"minLength": 1}]}), "a", "'allOf'"),
        ({**schema_of(a={"type": "string"}), "allOf": []}, None, "'allOf'"),
        (schema_of(a={"type": "string", "not": {"enum": ["x"]}}), "a", "'not'"),
        ({**schema_of(a={"type": "string"}), "additionalProperties": False}, None, "'additionalProperties'"),
        (schema_of(a={"type": "object", "properties": {"b": {"type": "string"}}}), "a", "nested objects"),
        ({**schema_of(a={"type": "string"}), "required": ["a", "ghost"]}, "ghost", "not defined in properties"),
        (schema_of(a={"type": "string", "enum": ["x", "y"], "enumNames": ["X"]}), "a", "one label per enum value"),
        (schema_of(a={"type": "integer", "minimum": 1, "default": 0}), "a", "default 0 is invalid"),
        (schema_of(a={"type": "string", "maxLength": 2, "default": "abc"}), "a", "default 'abc' is invalid"),
        (schema_of(a={"type": "string", "enum": ["x"], "default": "q"}), "a", "default 'q' is invalid"),
        (schema_of(a={"type": "boolean", "default": "yes"}), "a", "default 'yes' is invalid"),
        (schema_of(a={"type": "integer", "default": 1.5}), "a", "default 1.5 is invalid"),
        (
            schema_of(a={"type": "string", "oneOf": [{"const": "x", "title": "X"}], "default": "y"}),
            "a",
            "default 'y' is invalid",
        ),
        (
            schema_of(a={"type": "array", "items": {"type": "string", "enum": ["x"]}, "default": ["z"]}),
            "a",
            "default ['z'] is invalid",
        ),
        (
            schema_of(
                a={
                    "type": "array",
                    "items": {"type": "string", "enum": ["x", "y"]},
                    "maxItems": 1,
                    "default": ["x", "y"],
                }
            ),
            "a",
            "is invalid",
        ),
        (schema_of(a={"type": "string", "enum": [1, 2]}), "a", "only hold strings"),
        (schema_of(a={"type": "string", "enum": []}), "a", "non-empty"),
        (schema_of(a={"type": "string", "oneOf": [{"const": 1, "title": "One"}]}), "a", "string const"),
        (schema_of(a={"type": "string", "oneOf": [{"const": "x"}]}), "a", "string title"),
        (schema_of(a={"type": "array", "items": {"anyOf": [{"const": "x"}]}}), "a", "string title"),
        (schema_of(a={"type": "integer", "minimum": 5, "maximum": 1}), "a", "minimum (5) is greater than maximum (1)"),
        (schema_of(a={"type": "string", "minLength": 5, "maxLength": 1}), "a", "minLength (5) is greater"),
        (
            schema_of(a={"type": "array", "items": {"type": "string", "enum": ["x"]}, "minItems": 3, "maxItems": 1}),
            "a",
            "minItems (3) is greater",
        ),
        (schema_of(a={"type": "string", "minLength": -1}), "a", "non-negative integer"),
        (schema_of(a={"type": "number", "minimum": "0"}), "a", "minimum must be a number"),
        (schema_of(a={"type": "string", "format": "ipv4"}), "a", "format 'ipv4'"),
        (schema_of(a={"type": "array", "items": {"type": "integer"}}), "a", "multi-selects"),
        (schema_of(a={"type": "array", "items": {"type": "object"}}), "a", "multi-selects"),
        (schema_of(a={"type": "array"}), "a", "items object"),
        (schema_of(a={"type": "null"}), "a", "type 'null'"),
        (schema_of(a={"description": "no type"}), "a", "type None"),
        (schema_of(a="string"), "a", "must be an object"),
        (schema_of(a={"type": "string", "title": 3}), "a", "title must be a string"),
        (schema_of(a={"type": "string", "const": "x"}), "a", "'const'"),
        (schema_of(a={"type": "string", "anyOf": [{"const": "x", "title": "X"}]}), "a", "'anyOf'"),
    ],
)
@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
def test_check_schema_rejections_name_the_field(
    schema: dict[str, Any], field: str | None, fragment: str, strict: bool
) -> None:
    with pytest.raises(SchemaError) as exc:
        check_schema(schema, NEW, strict=strict)
    found = problems_of(exc)
    assert field in found, exc.value.problems
    assert fragment in found[field], exc.value.problems
    if field is not None:
        assert repr(field) in str(exc.value)


@pytest.mark.parametrize(
    "schema",
    [None, [], "object", {"type": "object"}, {"type": "string", "properties": {}}, {"properties": {}}],
)
def test_check_schema_rejects_a_non_object_top_level(schema: Any) -> None:
    with pytest.raises(SchemaError) as exc:
        check_schema(schema)
    assert all(name is None for name, _ in exc.value.problems)


def test_required_must_be_a_list_of_names() -> None:
    with pytest.raises(SchemaError, match="required must be a list"):
        check_schema({**schema_of(a={"type": "string"}), "required": "a"})


def test_unknown_keywords_refused_when_strict_tolerated_when_lenient() -> None:
    on_field = schema_of(a={"type": "string", "x-foo": 1, "examples": ["q"]})
    on_top = {**schema_of(a={"type": "string"}), "x-foo": {"bar": 1}}
    for schema, field in ((on_field, "a"), (on_top, None)):
        with pytest.raises(SchemaError) as exc:
            check_schema(schema, NEW, strict=True)
        assert field in problems_of(exc)
        assert "x-foo" in str(exc.value)
        check_schema(schema, NEW, strict=False)  # no error


def test_structural_keywords_are_refused_even_when_lenient() -> None:
    sneaky = schema_of(a={"type": "string", "enum": ["x"], "items": {"type": "string"}})
    with pytest.raises(SchemaError, match="'items'"):
        check_schema(sneaky, NEW, strict=False)


def test_a_full_valid_schema_passes_strictly() -> None:
    check_schema(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 50, "default": "x"},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
                "score": {"type": "number", "default": 95.5},
                "ok": {"type": "boolean", "default": False},
                "plan": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"], "default": "a"},
                "tier": {"type": "string", "oneOf": [{"const": "t", "title": "T"}], "default": "t"},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["x"]}, "minItems": 0, "maxItems": 1},
                "labels": {"type": "array", "items": {"anyOf": [{"const": "l", "title": "L"}]}, "default": ["l"]},
            },
            "required": ["name"],
        },
        NEW,
        strict=True,
    )


# --------------------------------------------------------------------------- versions


TITLED_WITH_DEFAULTS = {
    "type": "object",
    "properties": {
        "size": {
            "type": "string",
            "title": "Size",
            "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}],
            "default": "s",
        },
        "count": {"type": "integer", "minimum": 1, "default": 3},
        "name": {"type": "string", "default": "x"},
        "plan": {"type": "string", "enum": ["a", "b"], "default": "a"},
        "agree": {"type": "boolean", "default": True},
    },
    "required": ["size"],
}

MULTI = schema_of(tags={"type": "array", "items": {"type": "string", "enum": ["a", "b"]}})
TITLED_MULTI = schema_of(tags={"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}})


def test_2025_06_18_gate_rejects_titled_multi_and_non_boolean_defaults() -> None:
    with pytest.raises(SchemaError) as exc:
        check_schema(TITLED_WITH_DEFAULTS, OLD)
    reasons = [(name, reason) for name, reason in exc.value.problems]
    assert any(name == "size" and "titled single-select" in r for name, r in reasons)
    for name in ("size", "count", "name", "plan"):
        assert any(n == name and "default" in r and OLD in r for n, r in reasons), (name, reasons)
    assert not any(n == "agree" for n, _ in reasons)  # boolean defaults existed in 2025-06-18
    for multi in (MULTI, TITLED_MULTI):
        with pytest.raises(SchemaError, match="multi-select needs 2025-11-25") as exc2:
            check_schema(multi, OLD)
        assert "tags" in problems_of(exc2)
    with pytest.raises(SchemaError, match=r"\$schema"):
        check_schema({**schema_of(a={"type": "string"}), "$schema": "x"}, OLD)


def test_for_version_down_converts_titled_single_and_drops_non_boolean_defaults() -> None:
    original = {**TITLED_WITH_DEFAULTS, "$schema": "https://json-schema.org/draft/2020-12/schema"}
    snapshot = repr(original)
    old = for_version(original, OLD)
    assert repr(original) == snapshot  # the input is not mutated
    assert "$schema" not in old
    size = old["properties"]["size"]
    assert size == {"type": "string", "title": "Size", "enum": ["s", "l"], "enumNames": ["Small", "Large"]}
    assert "default" not in old["properties"]["count"] and old["properties"]["count"]["minimum"] == 1
    assert "default" not in old["properties"]["name"]
    assert "default" not in old["properties"]["plan"]
    assert old["properties"]["agree"]["default"] is True
    assert old["required"] == ["size"]
    check_schema(old, OLD, strict=True)


@pytest.mark.parametrize("multi", [MULTI, TITLED_MULTI], ids=["untitled", "titled"])
def test_for_version_refuses_multi_select_for_2025_06_18(multi: dict[str, Any]) -> None:
    with pytest.raises(SchemaError) as exc:
        for_version(multi, OLD)
    assert "tags" in problems_of(exc)


def test_for_version_keeps_newer_schemas_unchanged_and_still_gates() -> None:
    assert for_version(TITLED_WITH_DEFAULTS, NEW) is TITLED_WITH_DEFAULTS
    with pytest.raises(SchemaError):
        for_version(schema_of(a={"type": "object"}), NEW)


class OldFriendly(BaseModel):
    age: int = 30
    verified: bool = True
    size: Size = Size.SMALL


def test_form_schema_for_is_per_version_and_memoized() -> None:
    form = form_for(OldFriendly)
    old = form.schema_for(OLD)
    assert old is form.schema_for(OLD)
    assert old["properties"]["verified"]["default"] is True
    assert "default" not in old["properties"]["age"]
    assert old["properties"]["size"]["enumNames"] == ["Small (8 inch)", "Large (12 inch)"]
    assert form.schema_for(NEW) == form.schema
    with pytest.raises(SchemaError):
        form_for(Defaults).schema_for(OLD)  # it has multi-selects
    titled = form_for(Size).schema_for(OLD)["properties"]["value"]
    assert titled["enum"] == ["s", "l"] and titled["enumNames"] == ["Small (8 inch)", "Large (12 inch)"]


# --------------------------------------------------------------------------- issue 12: the subset, keyword by keyword

ERAS = ("2025-06-18", "2025-11-25", "2026-07-28")
NEWER = ("2025-11-25", "2026-07-28")

# One field of each kind, valid in every era where the kind exists.
BASES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "enum": {"type": "string", "enum": ["a", "b"]},
    "titled": {"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]},
    "multi": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    "titled_multi": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}},
}
# What the spec's schema.ts allows on each kind, per era (the shapes of 2025-11-25 are absent before).
SPEC_KEYWORDS: dict[str, dict[str, set[str]]] = {
    "2025-06-18": {
        "string": {"title", "description", "minLength", "maxLength", "format"},
        "integer": {"title", "description", "minimum", "maximum"},
        "number": {"title", "description", "minimum", "maximum"},
        "boolean": {"title", "description", "default"},
        "enum": {"title", "description", "enumNames"},
    },
    "2025-11-25": {
        "string": {"title", "description", "minLength", "maxLength", "format", "default"},
        "integer": {"title", "description", "minimum", "maximum", "default"},
        "number": {"title", "description", "minimum", "maximum", "default"},
        "boolean": {"title", "description", "default"},
        "enum": {"title", "description", "enumNames", "default"},
        "titled": {"title", "description", "default"},
        "multi": {"title", "description", "minItems", "maxItems", "default"},
        "titled_multi": {"title", "description", "minItems", "maxItems", "default"},
    },
}
SPEC_KEYWORDS["2026-07-28"] = SPEC_KEYWORDS["2025-11-25"]
# A value each keyword could carry on each kind (valid where the keyword is allowed).
SAMPLES: dict[str, Any] = {
    "title": "T",
    "description": "D",
    "minLength": 1,
    "maxLength": 5,
    "format": "email",
    "minimum": 0,
    "maximum": 9,
    "enumNames": ["A", "B"],
    "minItems": 0,
    "maxItems": 1,
    "pattern": "^a",
    "$ref": "#/$defs/x",
    "$dynamicRef": "#x",
    "$id": "https://example.com/s",
    "$anchor": "x",
    "$defs": {},
    "$comment": "c",
    "not": {"enum": ["z"]},
    "allOf": [{}],
    "anyOf": [{}],
    "if": {},
    "then": {},
    "else": {},
    "const": "a",
    "multipleOf": 1,
    "exclusiveMinimum": 0,
    "exclusiveMaximum": 9,
    "uniqueItems": True,
    "contains": {},
    "prefixItems": [{}],
    "additionalProperties": False,
    "properties": {},
    "propertyNames": {},
    "minProperties": 0,
    "contentMediaType": "text/plain",
    "examples": ["a"],
    "deprecated": False,
    "readOnly": False,
    "x-foo": 1,
}
DEFAULTS: dict[str, Any] = {
    "string": "a",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "enum": "a",
    "titled": "a",
    "multi": ["a"],
    "titled_multi": ["a"],
}
FIELD_KEYWORDS = sorted({*SAMPLES, "default"})


def _keyword_cases() -> list[Any]:
    cases = []
    for era in ERAS:
        for kind, allowed in SPEC_KEYWORDS[era].items():
            for keyword in FIELD_KEYWORDS:
                cases.append(pytest.param(era, kind, keyword, keyword in allowed, id=f"{era}-{kind}-{keyword}"))
    return cases


@pytest.mark.parametrize(("era", "kind", "keyword", "allowed"), _keyword_cases())
def test_defect_01_strict_gate_allows_exactly_the_spec_keywords_per_era(
    era: str, kind: str, keyword: str, allowed: bool
) -> None:
    """Issue 12 #1: every keyword on every field kind, both ways, from the spec's schema of each era."""
    value = DEFAULTS[kind] if keyword == "default" else SAMPLES[keyword]
    schema = schema_of(f={**BASES[kind], keyword: value})
    if allowed:
        check_schema(schema, era, strict=True)
        return
    with pytest.raises(SchemaError) as exc:
        check_schema(schema, era, strict=True)
    assert "f" in problems_of(exc), exc.value.problems
    assert keyword in problems_of(exc)["f"], exc.value.problems


ITEM_KEYWORDS = ["$ref", "$dynamicRef", "not", "allOf", "pattern", "minLength", "title", "description", "x-foo"]


@pytest.mark.parametrize("era", NEWER)
@pytest.mark.parametrize("keyword", ITEM_KEYWORDS)
@pytest.mark.parametrize("kind", ["multi", "titled_multi"])
def test_defect_01_strict_gate_refuses_any_keyword_inside_multi_select_items(era: str, keyword: str, kind: str) -> None:
    prop = BASES[kind]
    schema = schema_of(f={**prop, "items": {**prop["items"], keyword: SAMPLES.get(keyword, 1)}})
    with pytest.raises(SchemaError) as exc:
        check_schema(schema, era, strict=True)
    assert keyword in problems_of(exc)["f"], exc.value.problems
    check_schema(schema_of(f=prop), era, strict=True)  # the same field without it passes


@pytest.mark.parametrize("keyword", ["$ref", "$dynamicRef", "not", "allOf", "pattern", "minLength", "default"])
@pytest.mark.parametrize("kind", ["multi", "titled_multi"])
def test_defect_01_lenient_gate_refuses_validation_keywords_inside_items(keyword: str, kind: str) -> None:
    prop = BASES[kind]
    schema = schema_of(f={**prop, "items": {**prop["items"], keyword: SAMPLES.get(keyword, "a")}})
    with pytest.raises(SchemaError) as exc:
        check_schema(schema, NEW, strict=False)
    assert keyword in problems_of(exc)["f"], exc.value.problems


@pytest.mark.parametrize("kind", ["multi", "titled_multi"])
def test_defect_01_lenient_gate_tolerates_annotations_inside_items(kind: str) -> None:
    prop = BASES[kind]
    check_schema(schema_of(f={**prop, "items": {**prop["items"], "title": "T", "x-foo": 1}}), NEW, strict=False)


@pytest.mark.parametrize("era", NEWER)
@pytest.mark.parametrize("where", ["oneOf", "items.anyOf"])
@pytest.mark.parametrize("extra", [{"description": "d"}, {"x-foo": 1}, {"$ref": "#/x"}, {"enum": ["a"]}])
def test_defect_01_options_hold_exactly_const_and_title(era: str, where: str, extra: dict[str, Any]) -> None:
    option = {"const": "a", "title": "A", **extra}
    if where == "oneOf":
        field = {"type": "string", "oneOf": [option]}
    else:
        field = {"type": "array", "items": {"anyOf": [option]}}
    with pytest.raises(SchemaError) as exc:
        check_schema(schema_of(f=field), era, strict=True)
    [key] = extra
    assert key in problems_of(exc)["f"], exc.value.problems
    if key in ("description", "x-foo"):  # annotations: the client tolerates them
        check_schema(schema_of(f=field), era, strict=False)
    else:
        with pytest.raises(SchemaError):
            check_schema(schema_of(f=field), era, strict=False)


ROOT_KEYWORDS = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "T",
    "description": "D",
    "$defs": {},
    "$id": "https://example.com/s",
    "additionalProperties": False,
    "allOf": [{}],
    "x-foo": 1,
}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("keyword", sorted(ROOT_KEYWORDS))
def test_defect_01_root_keywords_per_era(era: str, keyword: str) -> None:
    """The root carries type, properties, required, and (from 2025-11-25) $schema: nothing else."""
    schema = {**schema_of(a={"type": "string"}), keyword: ROOT_KEYWORDS[keyword]}
    if keyword == "$schema" and era != "2025-06-18":
        check_schema(schema, era, strict=True)
        check_schema(schema, era, strict=False)
        return
    with pytest.raises(SchemaError) as exc:
        check_schema(schema, era, strict=True)
    assert None in problems_of(exc) and keyword in problems_of(exc)[None], exc.value.problems
    if keyword in ("title", "description", "x-foo"):
        check_schema(schema, era, strict=False)  # annotations: shown by clients, tolerated
    else:
        with pytest.raises(SchemaError):
            check_schema(schema, era, strict=False)


@pytest.mark.parametrize(
    ("kind", "keyword", "value"),
    [
        ("string", "pattern", "^[A-Z]{3}$"),
        ("integer", "exclusiveMinimum", 0),
        ("number", "exclusiveMaximum", 9.5),
        ("multi", "uniqueItems", True),
        ("string", "examples", ["x"]),
        ("string", "x-widget", "textarea"),
        ("boolean", "deprecated", True),
    ],
)
def test_defect_01_lenient_gate_tolerates_annotations_and_safe_assertions(kind: str, keyword: str, value: Any) -> None:
    schema = schema_of(f={**BASES[kind], keyword: value})
    check_schema(schema, NEW, strict=False)
    with pytest.raises(SchemaError, match=keyword):
        check_schema(schema, NEW, strict=True)


@pytest.mark.parametrize(
    ("kind", "keyword", "value"),
    [
        ("string", "$ref", "#/x"),
        ("string", "$dynamicRef", "#x"),
        ("string", "$id", "https://example.com/s"),
        ("string", "not", {"enum": ["a"]}),
        ("string", "allOf", [{}]),
        ("string", "if", {}),
        ("number", "multipleOf", 0.1),
        ("boolean", "const", True),
        ("multi", "contains", {}),
        ("multi", "prefixItems", [{}]),
        ("string", "$unknownCore", 1),
    ],
)
def test_defect_01_lenient_gate_still_refuses_json_schema_keywords(kind: str, keyword: str, value: Any) -> None:
    with pytest.raises(SchemaError) as exc:
        check_schema(schema_of(f={**BASES[kind], keyword: value}), NEW, strict=False)
    assert keyword in problems_of(exc)["f"]


@pytest.mark.parametrize("pattern", ["(?=a)a", "(a)\\1", "(?<!a)b", "\\k<n>", "a{1001}", "(", 5])
def test_defect_01_lenient_gate_refuses_patterns_it_cannot_run_in_linear_time(pattern: Any) -> None:
    with pytest.raises(SchemaError) as exc:
        check_schema(schema_of(f={"type": "string", "pattern": pattern}), NEW, strict=False)
    assert "pattern" in problems_of(exc)["f"]


def test_defect_01_form_for_refuses_a_pattern_constraint() -> None:
    class Coded(BaseModel):
        code: Annotated[str, Field(pattern="^[A-Z]{3}$")]

    with pytest.raises(SchemaError) as exc:
        form_for(Coded)
    assert "pattern" in problems_of(exc)["code"]


# --------------------------------------------------------------------------- issue 12 #2 and #4

REF_IN_ITEMS = {
    "type": "object",
    "properties": {"v": {"type": "array", "items": {"type": "string", "enum": ["a"], "$ref": "#/x"}, "default": ["a"]}},
}


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
@pytest.mark.parametrize("era", NEWER)
def test_defect_02_ref_in_items_with_a_default_is_a_schema_error(strict: bool, era: str) -> None:
    """Checking the default ran jsonschema on the $ref and leaked its internal referencing error."""
    with pytest.raises(SchemaError) as exc:
        check_schema(REF_IN_ITEMS, era, strict=strict)
    assert "$ref" in problems_of(exc)["v"]


def test_defect_04_form_for_takes_a_dict_schema() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    form = form_for(schema)
    assert form.model is None and form.schema == schema
    assert form.parse({"city": "Oslo"}) == {"city": "Oslo"}
    assert form_for(dict(schema)).schema == schema  # again: no unhashable-type error from a cache
    with pytest.raises(SchemaError) as exc:
        form_for({"type": "object", "properties": {"a": {"type": "object"}}})
    assert "a" in problems_of(exc)


@pytest.mark.parametrize("schema", [[{"type": "string"}], {1, 2}])
def test_defect_04_other_unhashable_schemas_name_the_right_api(schema: Any) -> None:
    with pytest.raises(SchemaError, match="pydantic model, a scalar type or a dict"):
        form_for(schema)


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_legacy_enum_names_may_repeat_a_title(version: str) -> None:
    """The spec asks enumNames for one label per value, not distinct labels; oneOf options with a
    repeated title are accepted too, so the strict gate takes both (issue 28, point 10)."""
    repeated = schema_of(a={"type": "string", "enum": ["z1", "z2"], "enumNames": ["Z", "Z"]})
    check_schema(repeated, version, strict=True)
    check_schema(repeated, version, strict=False)
    with pytest.raises(SchemaError, match="duplicate values"):  # the values themselves must still differ
        check_schema(schema_of(a={"type": "string", "enum": ["z", "z"], "enumNames": ["A", "B"]}), version)
