"""Python types -> ``requestedSchema``, and the one gate every requested schema passes.

:func:`form_for` renders a pydantic model (or a scalar shorthand: ``bool``, ``int``, ``float``,
``str``, ``Literal``, ``Enum``, ``list[Literal]``) into the flat schema subset the spec allows.
:func:`check_schema` is the gate: servers run it before sending, clients run it on what
they receive, and it is the only place that knows what the subset is. :func:`for_version`
down-converts a schema for an older client (titled enums become ``enumNames`` for
2025-06-18, defaults are dropped where that version has none) and gates the result.
"""

from __future__ import annotations

import datetime
import enum
import functools
import re
import types
import typing
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Literal, get_args, get_origin

import annotated_types as at
import orjson
from pydantic import AnyUrl, BaseModel, PydanticUndefinedAnnotation, TypeAdapter, create_model
from pydantic.fields import FieldInfo

from elicitkit._models import plain_builder
from elicitkit._typing import unwrap_annotated
from elicitkit.elicitation.enums import LEGACY_ENUM_NAMES, Format, TitledEnum, Titles, options_of, titled_options
from elicitkit.elicitation.errors import SchemaError
from elicitkit.elicitation.patterns import pattern_problem
from elicitkit.protocol.versions import LATEST_LEGACY, has_legacy_enum_shape_only

FORMATS = frozenset({"email", "uri", "date", "date-time"})
SCALAR_FIELD = "value"

# ----------------------------------------------------------------------------- the subset
#
# Every keyword, decided from the spec's own schema (schema/<version>/schema.ts, the
# ``ElicitRequest`` ``requestedSchema`` type and ``PrimitiveSchemaDefinition``). Eras: "2025-06-18"
# (and the versions before it, which had no elicitation) and "2025-11-25" (also 2026-07-28 and
# the draft, whose definitions are identical). "strict" is the server's gate, "lenient" the
# client's; a "-" is refused, naming the keyword.
#
# ==========================  ==========  ==========  ===================================
# where / keyword             2025-06-18  2025-11-25  lenient (client) adds
# ==========================  ==========  ==========  ===================================
# root type ("object")        yes         yes
# root properties, required   yes         yes
# root $schema (string)       -           yes
# root title, description     -           -           annotations (see below)
# string: type, title,        yes         yes
#   description, minLength,
#   maxLength, format (email,
#   uri, date, date-time)
# string: default             -           yes
# string: pattern             -           -           yes, if RE2 can run it (.patterns)
# number/integer: type,       yes         yes
#   title, description,
#   minimum, maximum
# number/integer: default     -           yes
# number: exclusiveMinimum,   -           -           yes (numbers)
#   exclusiveMaximum
# boolean: type, title,       yes         yes
#   description, default
# enum: type, title,          yes         yes
#   description, enum,
#   enumNames
# enum: default               -           yes
# titled single: type,        -           yes
#   title, description,
#   oneOf [{const, title}],
#   default
# multi: type "array",        -           yes         uniqueItems (boolean)
#   title, description,
#   minItems, maxItems,
#   items, default
# multi items (untitled)      -           exactly {type: "string", enum}
# multi items (titled)        -           exactly {anyOf: [{const, title}]}
# oneOf/anyOf option          -           exactly {const, title}
# every other JSON Schema     -           -           - (pattern, minLength, $ref, not...
#   keyword, anywhere                                   inside items are refused too)
# ==========================  ==========  ==========  ===================================
#
# "Annotations" the lenient gate tolerates anywhere (fields, items, options, root): title,
# description, examples, deprecated, readOnly, writeOnly, $comment, and any key that is not a
# JSON Schema keyword and does not start with "$" (``x-foo``, ``placeholder``...). Beyond the
# spec, the gate also refuses what cannot mean anything: empty or duplicate enums, enumNames
# of the wrong length (a label repeated is fine: the spec allows it), negative lengths, a
# minimum above its maximum, a default that does not fit its field, a required name with no
# property.

# Every JSON Schema keyword (2020-12 and draft-07 spellings): these are refused where the table
# above does not allow them, in both modes, since the validator would act on them.
_JSON_SCHEMA_KEYWORDS = frozenset(
    {
        "$id", "$schema", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef",
        "$recursiveAnchor", "$vocabulary", "$comment", "$defs", "definitions",
        "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies",
        "prefixItems", "items", "additionalItems", "contains", "properties", "patternProperties",
        "additionalProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
        "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
        "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
        "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required",
        "dependentRequired", "format", "contentEncoding", "contentMediaType", "contentSchema",
        "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
    }
)  # fmt: skip
_LENIENT_ANNOTATIONS = frozenset(
    {"title", "description", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}
)

_COMMON = frozenset({"type", "title", "description"})
_SPEC_2025_06_18 = {
    "string": _COMMON | {"minLength", "maxLength", "format"},
    "number": _COMMON | {"minimum", "maximum"},
    "boolean": _COMMON | {"default"},
    "enum": _COMMON | {"enum", "enumNames"},
    "titled": _COMMON,  # the shape itself is refused for this era (with its own message)
    "multi": _COMMON,
}
_SPEC_2025_11_25 = {
    "string": _COMMON | {"minLength", "maxLength", "format", "default"},
    "number": _COMMON | {"minimum", "maximum", "default"},
    "boolean": _COMMON | {"default"},
    "enum": _COMMON | {"enum", "enumNames", "default"},
    "titled": _COMMON | {"oneOf", "default"},
    "multi": _COMMON | {"items", "minItems", "maxItems", "default"},
}
_LENIENT_EXTRA = {
    "string": frozenset({"pattern"}),
    "number": frozenset({"exclusiveMinimum", "exclusiveMaximum"}),
    "boolean": frozenset(),
    "enum": frozenset(),
    "titled": frozenset(),
    "multi": frozenset({"uniqueItems"}),
}
_ROOT_2025_06_18 = frozenset({"type", "properties", "required"})
_ROOT_2025_11_25 = _ROOT_2025_06_18 | {"$schema"}
_UNTITLED_ITEMS = frozenset({"type", "enum"})
_TITLED_ITEMS = frozenset({"anyOf"})
_OPTION = frozenset({"const", "title"})


def _tolerated(key: str) -> bool:
    """A key the lenient gate lets through anywhere: an annotation, or no JSON Schema keyword at all."""
    return key in _LENIENT_ANNOTATIONS or (key not in _JSON_SCHEMA_KEYWORDS and not key.startswith("$"))


def _unknown(keys: Any, allowed: frozenset[str], strict: bool) -> list[str]:
    """The keys of a schema object outside ``allowed`` (lenient: outside it and not tolerated)."""
    return [key for key in keys if key not in allowed and (strict or not isinstance(key, str) or not _tolerated(key))]


# ----------------------------------------------------------------------------- the gate


_VERDICTS: OrderedDict[tuple[bytes, str, bool], tuple[tuple[str | None, str], ...]] = OrderedDict()
_VERDICTS_SIZE = 512


def check_schema(schema: Any, version: str = LATEST_LEGACY, *, strict: bool = True) -> None:
    """Raise :class:`SchemaError` naming every field outside the subset for ``version``.

    ``strict`` (servers) allows exactly the spec's keywords; clients pass ``strict=False`` to
    tolerate harmless annotations (``x-...``, ``examples``) and a few safe assertions servers
    built on other SDKs send (``pattern``), still refusing anything structural. The table at the
    top of this module says which keyword is allowed where, in each era.

    A schema is judged once per version and strictness: the verdict is kept (for the last 512
    schemas, keyed by their canonical JSON), since the same form is asked again and again.
    """
    if not isinstance(schema, dict):
        _check_schema(schema, version, strict)
        return
    try:
        key = (orjson.dumps(schema, option=orjson.OPT_SORT_KEYS), version, strict)
    except TypeError:  # not plain JSON (the gate will say what): nothing to key a verdict by
        _check_schema(schema, version, strict)
        return
    verdict = _VERDICTS.get(key)
    if verdict is None:
        try:
            _check_schema(schema, version, strict)
            verdict = ()
        except SchemaError as exc:
            verdict = tuple(exc.problems)
        _VERDICTS[key] = verdict
        if len(_VERDICTS) > _VERDICTS_SIZE:
            _VERDICTS.popitem(last=False)
    else:
        _VERDICTS.move_to_end(key)
    if verdict:
        raise SchemaError(list(verdict))


def _check_schema(schema: Any, version: str, strict: bool) -> None:
    problems: list[tuple[str | None, str]] = []
    if not isinstance(schema, dict):
        raise SchemaError([(None, "requestedSchema must be an object")])
    if schema.get("type") != "object":
        problems.append((None, 'requestedSchema must have "type": "object"'))
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise SchemaError([*problems, (None, "requestedSchema.properties must be an object")])
    legacy = has_legacy_enum_shape_only(version)
    root = _ROOT_2025_06_18 if legacy else _ROOT_2025_11_25
    for key in _unknown(schema, root, strict):
        if key == "$schema":
            problems.append((None, f"$schema is not part of the {version} requested schema"))
        else:
            problems.append((None, f"keyword {key!r} is not allowed at the top of a requested schema"))
    if "$schema" in schema and not legacy and not isinstance(schema["$schema"], str):
        problems.append((None, "$schema must be a string"))
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        problems.append((None, "required must be a list of property names"))
    else:
        for name in required:
            if name not in properties:
                problems.append((name, "listed as required but not defined in properties"))
    for name, prop in properties.items():
        if not isinstance(name, str):
            problems.append((None, f"property name {name!r} is not a string"))
            continue
        problems.extend((name, reason) for reason in _check_property(prop, version, strict))
    if problems:
        raise SchemaError(problems)


def _kind(prop: dict[str, Any]) -> str | None:
    kind = prop.get("type")
    if kind == "string":
        if "oneOf" in prop:
            return "titled"
        if "enum" in prop:
            return "enum"
        return "string"
    if kind in ("number", "integer"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "array":
        return "multi"
    return None


def _check_property(prop: Any, version: str, strict: bool) -> list[str]:
    if not isinstance(prop, dict):
        return ["a property schema must be an object"]
    kind = _kind(prop)
    if kind is None:
        kind_name = prop.get("type")
        if kind_name == "object" or "properties" in prop:
            return ["nested objects are not allowed; an elicitation form is flat"]
        if "$ref" in prop:
            return ["$ref is not allowed; an elicitation form is flat and self-contained"]
        return [f"type {kind_name!r} is not one of string, number, integer, boolean, or a string-choice array"]
    problems: list[str] = []
    legacy = has_legacy_enum_shape_only(version)
    allowed = (_SPEC_2025_06_18 if legacy else _SPEC_2025_11_25)[kind]
    if not strict:
        allowed = allowed | _LENIENT_EXTRA[kind]
    for key in _unknown(prop, allowed, strict):
        if key == "default" and legacy:
            problems.append(f"default on a {kind} field needs 2025-11-25; this client speaks {version}")
        elif kind in ("titled", "multi") and legacy and key in ("oneOf", "items", "minItems", "maxItems"):
            continue  # the shape itself is refused below
        elif key in _SPEC_2025_11_25[kind] or key in _LENIENT_EXTRA[kind] or key in _JSON_SCHEMA_KEYWORDS:
            problems.append(f"keyword {key!r} is not allowed on a {kind} field")
        else:
            problems.append(f"keyword {key!r} is not allowed on a {kind} field (not part of the spec's subset)")
    for key in ("title", "description"):
        if key in prop and not isinstance(prop[key], str):
            problems.append(f"{key} must be a string")
    if kind == "string":
        fmt = prop.get("format")
        if fmt is not None and fmt not in FORMATS:
            problems.append(f"format {fmt!r} is not one of {', '.join(sorted(FORMATS))}")
        problems.extend(_bounds(prop, "minLength", "maxLength", integer=True))
        if "pattern" in prop and "pattern" in allowed:
            reason = pattern_problem(prop["pattern"])
            if reason is not None:
                problems.append(reason)
    elif kind == "number":
        problems.extend(_bounds(prop, "minimum", "maximum", integer=False))
        problems.extend(_bounds(prop, "exclusiveMinimum", "exclusiveMaximum", integer=False))
    elif kind == "enum":
        problems.extend(_string_list(prop.get("enum"), "enum"))
        names = prop.get("enumNames")
        if names is not None:
            problems.extend(_string_list(names, "enumNames", unique=False))  # the spec allows repeated labels
            if isinstance(names, list) and isinstance(prop.get("enum"), list) and len(names) != len(prop["enum"]):
                problems.append("enumNames must have one label per enum value")
    elif kind == "titled":
        if legacy:
            problems.append(f"titled single-select (oneOf) needs 2025-11-25; this client speaks {version}")
        problems.extend(_titled(prop.get("oneOf"), "oneOf", strict))
    elif kind == "multi":
        if legacy:
            problems.append(f"multi-select needs 2025-11-25; this client speaks {version}")
        problems.extend(_items(prop.get("items"), strict))
        problems.extend(_bounds(prop, "minItems", "maxItems", integer=True))
        if "uniqueItems" in prop and not isinstance(prop["uniqueItems"], bool):
            problems.append("uniqueItems must be a boolean")
    if "default" in prop and not problems:
        problems.extend(_check_default(prop))
    return problems


def _items(items: Any, strict: bool) -> list[str]:
    """A multi-select's ``items``: exactly a string enum or an ``anyOf`` of options, nothing else."""
    if not isinstance(items, dict):
        return ["a multi-select needs an items object"]
    if "anyOf" in items:
        extra = _unknown(items, _TITLED_ITEMS, strict)
        problems = [f"keyword {key!r} is not allowed in a titled multi-select's items" for key in extra]
        return problems + _titled(items.get("anyOf"), "items.anyOf", strict)
    if items.get("type") == "string" and "enum" in items:
        extra = _unknown(items, _UNTITLED_ITEMS, strict)
        problems = [f"keyword {key!r} is not allowed in a multi-select's items" for key in extra]
        return problems + _string_list(items.get("enum"), "items.enum")
    return ["arrays are only allowed as multi-selects: items must be a string enum or anyOf const/title"]


def _bounds(prop: dict[str, Any], low: str, high: str, *, integer: bool) -> list[str]:
    problems = []
    for key in (low, high):
        value = prop.get(key)
        if value is None:
            continue
        ok = isinstance(value, int) if integer else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok or (integer and value < 0):
            problems.append(f"{key} must be a {'non-negative integer' if integer else 'number'}")
    lo, hi = prop.get(low), prop.get(high)
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
        problems.append(f"{low} ({lo}) is greater than {high} ({hi})")
    return problems


def _string_list(value: Any, where: str, *, unique: bool = True) -> list[str]:
    if not isinstance(value, list) or not value:
        return [f"{where} must be a non-empty list"]
    if not all(isinstance(v, str) for v in value):
        return [f"{where} may only hold strings"]
    if unique and len(set(value)) != len(value):
        return [f"{where} has duplicate values"]
    return []


def _titled(value: Any, where: str, strict: bool = True) -> list[str]:
    if not isinstance(value, list) or not value:
        return [f"{where} must be a non-empty list of {{const, title}} options"]
    for option in value:
        if (
            not isinstance(option, dict)
            or not isinstance(option.get("const"), str)
            or not isinstance(option.get("title"), str)
        ):
            return [f"every {where} option needs a string const and a string title"]
        extra = _unknown(option, _OPTION, strict)
        if extra:
            return [f"{where} options may only hold const and title, not {', '.join(map(repr, extra))}"]
    consts = [option["const"] for option in value]
    if len(set(consts)) != len(consts):
        return [f"{where} has duplicate const values"]
    return []


def _check_default(prop: dict[str, Any]) -> list[str]:
    from elicitkit.elicitation.answers import field_problems

    return [f"default {prop['default']!r} is invalid: {reason}" for reason in field_problems(prop, prop["default"])]


def for_version(schema: dict[str, Any], version: str) -> dict[str, Any]:
    """``schema`` as a client speaking ``version`` understands it, gated for that version."""
    if has_legacy_enum_shape_only(version):
        adapted = dict(schema)
        adapted.pop("$schema", None)
        properties = {}
        for name, prop in schema.get("properties", {}).items():
            prop = dict(prop)
            if prop.get("type") == "string" and "oneOf" in prop:
                options = prop.pop("oneOf")
                prop["enum"] = [o["const"] for o in options]
                prop["enumNames"] = [o["title"] for o in options]
            if prop.get("type") != "boolean":
                prop.pop("default", None)
            properties[name] = prop
        adapted["properties"] = properties
        schema = adapted
    check_schema(schema, version)
    return schema


# ----------------------------------------------------------------------------- rendering


class Form:
    """A question's shape: the schema to send, and how to turn an answer back into Python."""

    __slots__ = ("_by_version", "_conversion", "_quick", "_required", "model", "scalar", "schema")

    def __init__(
        self,
        schema: dict[str, Any],
        model: type[BaseModel] | None,
        scalar: bool = False,
        conversion: tuple[tuple[str, str, Converter | None], ...] | None = None,
    ) -> None:
        self.schema = schema
        self.model = model  # None: a hand-written dict schema; answers stay dicts
        self.scalar = scalar  # True: one value was asked for; unwrap it from the one-field form
        # (wire name, field name, converter) per field, or None: the model has validators of its own
        self._conversion = conversion
        self._by_version: dict[str, dict[str, Any]] = {}
        # The model's required fields, read once (a class's ``model_fields`` is a costly descriptor).
        self._required = (
            frozenset(name for name, info in model.model_fields.items() if info.is_required()) if model else frozenset()
        )
        self._quick = plain_builder(model) if model is not None and conversion is not None else None

    def parse(self, content: dict[str, Any]) -> Any:
        """A validated answer (``content``) as the model instance, the bare scalar, or the dict.

        ``content`` has passed the schema check (:func:`~elicitkit.elicitation.answers.validate_answer`),
        which the model's own fields and constraints rendered: building the instance converts
        values (a date string to a ``date``, a choice to its ``Enum``) without judging them a
        second time. A model with validators of its own (``field_validator``, ``model_validator``)
        is validated by pydantic instead, since those rules exist only in Python.
        """
        model = self.model
        if model is None:
            return content
        instance = self._built(model, content) if self._conversion is not None else None
        if instance is None:
            values = dict(content)
            for name in self._required:
                values.setdefault(name, None)
            instance = model.model_validate(values)
        return getattr(instance, SCALAR_FIELD) if self.scalar else instance

    def _built(self, model: type[BaseModel], content: dict[str, Any]) -> BaseModel | None:
        """The instance from checked content, or None when a value does not convert (pydantic decides)."""
        fields: dict[str, Any] = {}
        try:
            for wire, name, convert in self._conversion or ():
                if wire in content:
                    value = content[wire]
                    fields[name] = value if convert is None or value is None else convert(value)
                elif name in self._required:
                    fields[name] = None  # Optional[X] without a default, left out of the answer
        except (TypeError, ValueError):
            return None
        quick = self._quick
        if quick is not None and len(fields) == len(self._conversion or ()):  # every field, in the model's order
            return quick(fields)
        return model.model_construct(**fields)

    def schema_for(self, version: str) -> dict[str, Any]:
        """The schema down-converted and gated for a client speaking ``version`` (memoized)."""
        found = self._by_version.get(version)
        if found is None:
            found = self._by_version[version] = for_version(self.schema, version)
        return found


def form_from_schema(schema: Any) -> Form:
    """A hand-written ``requestedSchema`` as a :class:`Form` (gated strictly, answers stay dicts)."""
    check_schema(schema)
    return Form(schema, None)


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(args) != len(get_args(annotation))
        if len(args) == 1:
            return args[0], optional
        raise _FieldProblem("unions are not allowed in a form (only Optional[X])")
    return annotation, False


class _FieldProblem(Exception):
    pass


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_default(v) for v in value]
    if isinstance(value, AnyUrl):
        return str(value)
    return value


def _choices(annotation: Any) -> tuple[list[str], dict[str, str]] | None:
    """(values, titles) when ``annotation`` is a string-choice type (Literal or str Enum)."""
    if get_origin(annotation) is Literal:
        values = list(get_args(annotation))
        if not all(isinstance(v, str) for v in values):
            raise _FieldProblem("Literal choices must all be strings")
        return values, {}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        try:
            options = options_of(annotation)
        except TypeError as exc:
            raise _FieldProblem(str(exc)) from None
        titles = {v: t for v, t in options if t is not None}
        return [v for v, _ in options], titles
    return None


_WORD = re.compile(r"[A-Z]{2,}(?=[A-Z][a-z]|[0-9]|$)|[A-Z]?[a-z]+|[A-Z]|[0-9]+")


def title_from_name(name: str) -> str:
    """A label that reads well from a field name: ``cpu_cores`` -> "Cpu cores", ``memoryGB`` -> "Memory GB".

    The rule, independent of the description: split on ``_``/``-`` and at camelCase humps,
    write the words in sentence case (first word capitalised, the rest lower case), except
    a run of capitals inside a mixed-case part (``userID``, ``CPUCores``), which is kept as
    written: that is an acronym the author spelled out. An all-capitals part (``MAX_SIZE``)
    is shouting, not an acronym: "Max size". Give ``Field(title=...)`` for anything else.
    """
    words: list[str] = []
    for part in re.split(r"[_\-\s]+", name):
        mixed = part != part.upper() and part != part.lower()
        for word in _WORD.findall(part):
            acronym = mixed and len(word) > 1 and word.isupper()
            words.append(word if acronym else word.lower())
    if not words:
        return name
    first = words[0]
    words[0] = first if first.isupper() and len(first) > 1 else first[:1].upper() + first[1:]
    return " ".join(words)


def _property(annotation: Any, info: FieldInfo, name: str) -> tuple[dict[str, Any], bool]:
    """One field's property schema, and whether it is required."""
    base, extras = unwrap_annotated(annotation)
    extras = [*extras, *info.metadata]
    base, optional = _strip_optional(base)
    base, more = unwrap_annotated(base)
    extras.extend(more)
    titles = next((x.titles for x in extras if isinstance(x, Titles)), None)
    legacy_names = any(x is LEGACY_ENUM_NAMES for x in extras)
    fmt = next((x.name for x in extras if isinstance(x, Format)), None)
    extra = info.json_schema_extra
    extra_format = extra.get("format") if isinstance(extra, dict) else None
    if fmt is None and isinstance(extra_format, str):
        fmt = extra_format  # Field(json_schema_extra={"format": "email"}) means the same as Format("email")
    prop: dict[str, Any] = {}
    choices = _choices(base)
    if base is bool:
        prop["type"] = "boolean"
    elif base is int:
        prop["type"] = "integer"
    elif base is float:
        prop["type"] = "number"
    elif base is str:
        prop["type"] = "string"
    elif base is datetime.datetime:
        prop.update(type="string", format="date-time")
    elif base is datetime.date:
        prop.update(type="string", format="date")
    elif isinstance(base, type) and issubclass(base, AnyUrl):
        prop.update(type="string", format="uri")
    elif choices is not None:
        values, enum_titles = choices
        all_titles = {**enum_titles, **(titles or {})}
        titled = bool(all_titles) or (isinstance(base, type) and issubclass(base, TitledEnum))
        prop["type"] = "string"
        if titled and legacy_names:
            prop["enum"] = values
            prop["enumNames"] = [all_titles.get(v, v) for v in values]
        elif titled:
            prop["oneOf"] = titled_options(values, all_titles)
        else:
            prop["enum"] = values
    elif get_origin(base) in (list, set, frozenset, tuple):
        args = get_args(base)
        item = args[0] if args else Any
        item_choices = _choices(unwrap_annotated(item)[0])
        if item_choices is None or (get_origin(base) is tuple and len(args) != 2):
            raise _FieldProblem("arrays are only allowed as multi-selects: list[Literal[...]] or list[SomeStrEnum]")
        values, enum_titles = item_choices
        all_titles = {**enum_titles, **(titles or {})}
        prop["type"] = "array"
        prop["items"] = (
            {"anyOf": titled_options(values, all_titles)} if all_titles else {"type": "string", "enum": values}
        )
    elif isinstance(base, type) and issubclass(base, BaseModel):
        raise _FieldProblem(f"nested model {base.__name__} is not allowed; an elicitation form is flat")
    else:
        shown = getattr(base, "__name__", repr(base))
        raise _FieldProblem(f"type {shown} is not a form primitive (str, int, float, bool, date, choices)")
    if fmt is not None:
        if prop.get("type") != "string" or "enum" in prop or "oneOf" in prop:
            raise _FieldProblem("Format(...) applies to plain string fields only")
        prop["format"] = fmt
    for constraint in extras:
        _apply_constraint(prop, constraint)
    title = info.title
    prop["title"] = title if title is not None else title_from_name(name)
    if info.description:
        prop["description"] = info.description
    if not info.is_required():
        default = info.get_default(call_default_factory=True)
        if default is not None:
            prop["default"] = _json_default(default)
    required = info.is_required() and not optional
    return prop, required


def _apply_constraint(prop: dict[str, Any], constraint: Any) -> None:
    kind = prop["type"]
    if isinstance(constraint, (Titles, Format)) or constraint is LEGACY_ENUM_NAMES:
        return
    if isinstance(constraint, at.Ge) and kind in ("integer", "number"):
        prop["minimum"] = constraint.ge
    elif isinstance(constraint, at.Le) and kind in ("integer", "number"):
        prop["maximum"] = constraint.le
    elif isinstance(constraint, at.MinLen):
        prop["minItems" if kind == "array" else "minLength"] = constraint.min_length
    elif isinstance(constraint, at.MaxLen):
        prop["maxItems" if kind == "array" else "maxLength"] = constraint.max_length
    elif isinstance(constraint, (at.Gt, at.Lt)):
        raise _FieldProblem("exclusive bounds (gt/lt) are not in the elicitation subset; use ge/le")
    elif isinstance(constraint, at.MultipleOf):
        raise _FieldProblem("multiple_of is not in the elicitation subset")
    elif hasattr(constraint, "pattern") and getattr(constraint, "pattern", None) is not None:
        raise _FieldProblem(
            "pattern is not in the elicitation subset (no spec version has it); check the answer in the tool"
        )
    elif type(constraint).__name__ == "_PydanticGeneralMetadata":
        unknown = {k: v for k, v in vars(constraint).items() if v is not None}
        if unknown:
            raise _FieldProblem(f"constraint {unknown} is not in the elicitation subset")
    else:
        raise _FieldProblem(f"constraint {constraint!r} cannot be expressed in an elicitation form")


Converter = Callable[[Any], Any]


def _datetime(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.upper())  # RFC 3339 allows a lower-case "t" and "z"


def _converter(annotation: Any) -> Converter | None:
    """How a checked JSON value of this (already rendered) field becomes its Python type; None: as it is."""
    base, _ = unwrap_annotated(annotation)
    base, _ = _strip_optional(base)
    base, _ = unwrap_annotated(base)
    if base is float:
        return float
    if base is datetime.datetime:
        return _datetime
    if base is datetime.date:
        return datetime.date.fromisoformat
    if isinstance(base, type) and issubclass(base, (AnyUrl, enum.Enum)):
        return base
    origin = get_origin(base)
    if origin in (list, set, frozenset, tuple):
        item = _converter(get_args(base)[0]) if get_args(base) else None
        container: Callable[[Any], Any] = origin
        return (lambda values: container(values)) if item is None else (lambda values: container(map(item, values)))
    return None


def _has_own_rules(model: type[BaseModel]) -> bool:
    """True when the model carries validators of its own, which only pydantic can run."""
    found = model.__pydantic_decorators__
    return bool(found.field_validators or found.model_validators or found.root_validators or found.validators)


def _is_model(schema: Any) -> bool:
    return isinstance(schema, type) and issubclass(schema, BaseModel)


def form_for(schema: Any) -> Form:
    """A gated :class:`Form` for a model, a scalar shorthand, or a hand-written ``requestedSchema`` dict.

    Types are rendered once (cached per type); a dict is gated strictly on every call (the gate
    keeps its verdict) and its answers stay dicts, as with :func:`form_from_schema`.
    """
    if isinstance(schema, dict):
        return form_from_schema(schema)
    try:
        hash(schema)
    except TypeError:
        problem = f"a {type(schema).__name__} is not a schema: pass a pydantic model, a scalar type or a dict"
        raise SchemaError([(None, problem)]) from None
    return _form_for_type(schema)


@functools.cache
def _form_for_type(schema: Any) -> Form:
    """Render (once per type) a model or scalar shorthand into a gated :class:`Form`."""
    if _is_model(schema):
        model: type[BaseModel] = schema
        scalar = False
        if not model.__pydantic_complete__:  # forward references not resolved yet: resolve them now
            try:
                model.model_rebuild()
            except PydanticUndefinedAnnotation as exc:
                raise SchemaError([(None, f"{model.__name__} refers to an undefined type: {exc.name}")]) from None
    else:
        try:
            TypeAdapter(schema)
        except Exception as exc:
            raise SchemaError([(None, f"{schema!r} is neither a pydantic model nor a scalar type: {exc}")]) from None
        model = create_model("Answer", **{SCALAR_FIELD: (schema, ...)})  # type: ignore[call-overload]
        scalar = True
    problems: list[tuple[str | None, str]] = []
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, info in model.model_fields.items():
        wire_name = info.alias or name
        try:
            prop, is_required = _property(info.annotation, info, wire_name)
        except _FieldProblem as exc:
            problems.append((wire_name, str(exc)))
            continue
        properties[wire_name] = prop
        if is_required:
            required.append(wire_name)
    if problems:
        raise SchemaError(problems)
    rendered: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        rendered["required"] = required
    check_schema(rendered, LATEST_LEGACY)
    conversion = None
    if not _has_own_rules(model):
        conversion = tuple(
            (info.alias or name, name, _converter(info.annotation)) for name, info in model.model_fields.items()
        )
    return Form(rendered, model, scalar, conversion)
