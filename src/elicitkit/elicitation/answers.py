"""Answers: fill defaults (SEP-1034), then validate against the requested schema.

Servers and clients both call :func:`validate_answer` and :func:`parse_result`, so an answer
is judged the same way on either side. Validation is JSON Schema (``jsonschema``, with
format checks) over a copy of the requested schema that forbids unknown fields, plus the
rules JSON Schema leaves loose: an integer field takes an ``int`` (not ``30.0``, not ``True``).
Remote ``$ref`` is never fetched: the gate refuses ``$ref`` and the validator has no
retrieval.

Answers to the spec's flat form subset are checked first by a small compiled checker (one
per schema, cached with the validator) that knows exactly those keywords and says only
"valid" or "not sure"; "not sure" (and any schema with a keyword it does not know) goes to
``jsonschema``, which has the last word and writes the error messages. The fast check is
never more lenient than ``jsonschema``: it accepts a subset of what ``jsonschema`` accepts.

Nothing here may stall or crash on hostile input, since either side's schema or answer can
come from the other: ``pattern`` runs on RE2 (linear time, see :mod:`.patterns`) within a
work budget per check, ``email`` is checked without a regular expression, and any failure of
the evaluation itself (a schema that cannot be evaluated) is an :class:`InvalidAnswer`, never
another exception.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

import orjson

from elicitkit.elicitation.errors import InvalidAnswer
from elicitkit.elicitation.patterns import UnsupportedPattern, compile_pattern, found_in
from elicitkit.elicitation.results import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationResult,
)

if TYPE_CHECKING:
    from jsonschema import FormatChecker
    from jsonschema.exceptions import ValidationError

# Characters x program size a single ``pattern`` check may cost: RE2 is linear in the text, but
# a pattern whose DFA blows up falls back to an NFA costing about 15 ns per character per
# program instruction; this budget keeps the worst case near 0.25 s per check.
PATTERN_WORK_LIMIT = 16_000_000
_REPR_CHARS = 200  # longest quoted value in a problem (answers can be megabytes)


def _is_int(_: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def pattern_fits(program: Any, text: str) -> bool:
    """True when ``program`` (compiled) matches somewhere in ``text``; raises if over the work budget."""
    if len(text) * program.programsize > PATTERN_WORK_LIMIT:
        raise UnsupportedPattern(f"a value of {len(text)} characters is too long to check against this pattern")
    return found_in(program, text)


def _pattern_keyword(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """jsonschema's ``pattern``, on RE2 within the work budget (Python's ``re`` backtracks)."""
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "string"):
        return
    try:
        matched = pattern_fits(compile_pattern(pattern), instance)
    except (UnsupportedPattern, TypeError) as exc:
        yield ValidationError(f"cannot be checked against pattern {_short(pattern)}: {exc}")
        return
    if not matched:
        yield ValidationError(f"{_short(instance)} does not match {_short(pattern)}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _REPR_CHARS else text[: _REPR_CHARS - 5] + "...'" + f" ({len(text)} chars)"


# jsonschema (and referencing) load on the first answer the fast check cannot settle, not at
# import: a process that never judges such an answer (``elicitkit --help``, a server that only
# lists tools) does not pay for them, and every test or CLI subprocess starts faster.
@cache
def _strict() -> tuple[Any, FormatChecker, Any]:
    """(the validator class, the format checker, the registry without retrieval), built once."""
    from jsonschema import Draft202012Validator, FormatChecker
    from jsonschema.validators import extend
    from referencing import Registry

    types = Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int)
    validator_class = extend(  # type: ignore[no-untyped-call]
        Draft202012Validator, validators={"pattern": _pattern_keyword}, type_checker=types
    )
    formats = FormatChecker(["date", "date-time", "uri", "email"])
    formats.checks("email")(_email)  # stricter than jsonschema's "contains an @"
    no_remote: Registry[Any] = Registry()  # nothing to retrieve from: remote $ref can never be fetched
    return validator_class, formats, no_remote


def _formats() -> FormatChecker:
    return _strict()[1]


class _Validator:
    """The jsonschema validator of one (closed) schema, built on first use."""

    __slots__ = ("_built", "_schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema
        self._built: Any = None

    def iter_errors(self, instance: Any) -> Iterator[ValidationError]:
        if self._built is None:
            validator_class, formats, no_remote = _strict()
            self._built = validator_class(self._schema, format_checker=formats, registry=no_remote)
        errors: Iterator[ValidationError] = self._built.iter_errors(instance)
        return errors


def _email(value: object) -> bool:
    """``local@domain.tld``: one ``@``, no whitespace, a dot inside the domain (linear, no regex).

    The regex this replaces, ``^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$``, backtracked quadratically on a
    domain full of dots: 16,000 characters took 4.9 s.
    """
    if not isinstance(value, str):
        return True
    local, at, domain = value.partition("@")
    if not at or not local or "@" in domain or value.split(maxsplit=1) != [value]:
        return False
    return "." in domain[1:-1]


_CACHE: OrderedDict[bytes, tuple[Any, Any]] = OrderedDict()  # schema -> (validator, fast check or None)
_CACHE_SIZE = 512


def _compiled(schema: dict[str, Any]) -> tuple[Any, Any]:
    """(the jsonschema validator, the fast check or None) for ``schema``, built once per schema."""
    try:
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # not plain JSON: no caching, and only jsonschema knows what to make of it
        closed = {**schema, "additionalProperties": False}
        return _Validator(closed), None
    found = _CACHE.get(key)
    if found is not None:
        _CACHE.move_to_end(key)
        return found
    closed = {**schema, "additionalProperties": False}
    entry = (_Validator(closed), _fast_check(schema))
    _CACHE[key] = entry
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return entry


def compiled_schema(schema: dict[str, Any]) -> tuple[Any, Any]:
    """What checking an answer against ``schema`` needs, for a caller that asks the same schema
    object again and again and keeps it (:func:`validate_answer`'s ``compiled``): the cache is
    found by the schema's sorted JSON, which is then not written again for every answer."""
    return _compiled(schema)


def _validator(schema: dict[str, Any]) -> Any:
    return _compiled(schema)[0]


# -- the fast check -------------------------------------------------------------------------
#
# Each property compiles to a function value -> bool that is True only where jsonschema (with
# the integer rule above) would find no error; anything outside the known keywords compiles
# to None, and then the whole schema is left to jsonschema.

_ANNOTATION_KEYS = frozenset(
    {"title", "description", "default", "enumNames", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}
)
_PROPERTY_KEYS = _ANNOTATION_KEYS | {
    "type",
    "enum",
    "oneOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "items",
    "minItems",
    "maxItems",
}
_TOP_KEYS = frozenset({"type", "properties", "required", "$schema", "title", "description"})

Check = Any  # Callable[[Any], bool]


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _string_choices(options: Any, item_keys: frozenset[str]) -> frozenset[str] | None:
    """The consts of a ``oneOf``/``anyOf`` list of ``{const, title}`` options (distinct strings), or None."""
    if not isinstance(options, list) or not options:
        return None
    consts = []
    for option in options:
        if not isinstance(option, dict) or set(option) - item_keys or not isinstance(option.get("const"), str):
            return None
        consts.append(option["const"])
    return frozenset(consts) if len(set(consts)) == len(consts) else None


def _string_enum(values: Any) -> frozenset[str] | None:
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        return None
    return frozenset(values)


def _fast_property(prop: Any) -> Check | None:
    if not isinstance(prop, dict) or set(prop) - _PROPERTY_KEYS:
        return None
    kind = prop.get("type")
    checks: list[Check] = []
    if kind == "string":
        if "items" in prop or "minItems" in prop or "maxItems" in prop:
            return None
        checks.append(lambda v: isinstance(v, str))
        if "enum" in prop:
            enum = _string_enum(prop["enum"])
            if enum is None:
                return None
            checks.append(enum.__contains__)
        if "oneOf" in prop:
            choices = _string_choices(prop["oneOf"], frozenset({"const", "title", "description"}))
            if choices is None:
                return None
            checks.append(choices.__contains__)
        low, high = prop.get("minLength"), prop.get("maxLength")
        if (low is not None and not _count(low)) or (high is not None and not _count(high)):
            return None
        if low is not None:
            checks.append(lambda v, n=low: len(v) >= n)
        if high is not None:
            checks.append(lambda v, n=high: len(v) <= n)
        if "pattern" in prop:
            try:
                compiled = compile_pattern(prop["pattern"])
            except (TypeError, UnsupportedPattern):
                return None  # jsonschema's pattern keyword says why
            program_size = compiled.programsize
            checks.append(
                lambda v, rx=compiled, size=program_size: len(v) * size <= PATTERN_WORK_LIMIT and found_in(rx, v)
            )
        if "format" in prop:
            fmt = prop["format"]
            if not isinstance(fmt, str):
                return None
            checks.append(lambda v, f=fmt: _formats().conforms(v, f))
    elif kind in ("integer", "number"):
        if set(prop) & {"enum", "oneOf", "minLength", "maxLength", "pattern", "format", "items", "minItems"}:
            return None
        if "maxItems" in prop:
            return None
        checks.append((lambda v: _is_int(None, v)) if kind == "integer" else _number)
        low, high = prop.get("minimum"), prop.get("maximum")
        if (low is not None and not _number(low)) or (high is not None and not _number(high)):
            return None
        if low is not None:
            checks.append(lambda v, n=low: v >= n)
        if high is not None:
            checks.append(lambda v, n=high: v <= n)
    elif kind == "boolean":
        if set(prop) - _ANNOTATION_KEYS - {"type"}:
            return None
        checks.append(lambda v: isinstance(v, bool))
    elif kind == "array":
        if set(prop) & {"enum", "oneOf", "minLength", "maxLength", "pattern", "format", "minimum", "maximum"}:
            return None
        items = prop.get("items")
        if not isinstance(items, dict):
            return None
        if "anyOf" in items:
            if set(items) - {"anyOf"} - _ANNOTATION_KEYS:
                return None
            allowed = _string_choices(items["anyOf"], frozenset({"const", "title", "description"}))
        elif items.get("type") == "string" and "enum" in items:
            if set(items) - {"type", "enum"} - _ANNOTATION_KEYS:
                return None
            allowed = _string_enum(items["enum"])
        else:
            return None
        if allowed is None:
            return None
        checks.append(lambda v, ok=allowed: isinstance(v, list) and all(isinstance(x, str) and x in ok for x in v))
        low, high = prop.get("minItems"), prop.get("maxItems")
        if (low is not None and not _count(low)) or (high is not None and not _count(high)):
            return None
        if low is not None:
            checks.append(lambda v, n=low: len(v) >= n)
        if high is not None:
            checks.append(lambda v, n=high: len(v) <= n)
    else:
        return None
    if len(checks) == 1:
        return checks[0]
    chain = tuple(checks)
    return lambda v: all(check(v) for check in chain)


def _fast_check(schema: Any) -> Check | None:
    """A check of whole answers (dicts) for a flat form schema, or None to always use jsonschema."""
    if not isinstance(schema, dict) or set(schema) - _TOP_KEYS or schema.get("type") != "object":
        return None
    properties = schema.get("properties")
    required = schema.get("required", [])
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    if not all(isinstance(name, str) for name in required) or len(set(required)) != len(required):
        return None
    fields: dict[str, Check] = {}
    for name, prop in properties.items():
        check = _fast_property(prop)
        if check is None:
            return None
        fields[name] = check
    needed = tuple(required)

    def check_answer(answer: dict[str, Any]) -> bool:
        for name in needed:
            if name not in answer:
                return False
        for name, value in answer.items():
            field_check = fields.get(name) if isinstance(name, str) else None
            if field_check is None or not field_check(value):
                return False
        return True

    return check_answer


def _describe(error: ValidationError) -> tuple[str | None, str]:
    path = [p for p in error.absolute_path]
    field = str(path[0]) if path else None
    if error.validator == "additionalProperties":
        schema: Any = error.schema
        instance: Any = error.instance
        extra = sorted(set(instance) - set(schema.get("properties", {})))
        shown = ", ".join(extra) if len(extra) <= 20 else ", ".join(extra[:20]) + f" (+{len(extra) - 20} more)"
        return (extra[0] if len(extra) == 1 else None), f"unknown field(s): {shown}"
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return missing, "required field is missing"
    if error.validator == "type":
        expected = error.validator_value
        return field, f"expected {expected}, got {type(error.instance).__name__} {_short(error.instance)}"
    if error.validator in ("oneOf", "anyOf"):
        return field, f"{_short(error.instance)} is not one of the offered choices"
    message = error.message
    return field, message if len(message) <= 2 * _REPR_CHARS else message[: 2 * _REPR_CHARS] + "..."


def _unevaluable(exc: BaseException) -> InvalidAnswer:
    """The answer cannot be judged because the schema cannot be evaluated (it never passed the gate)."""
    return InvalidAnswer([(None, f"the requested schema cannot be evaluated ({type(exc).__name__})")])


def apply_defaults(schema: dict[str, Any], content: dict[str, Any]) -> dict[str, Any]:
    """``content`` with every omitted field that has a schema default filled in (SEP-1034)."""
    filled = dict(content)
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(properties, dict):
        for name, prop in properties.items():
            if name not in filled and isinstance(prop, dict) and "default" in prop:
                filled[name] = prop["default"]
    return filled


def validate_answer(
    schema: dict[str, Any], content: Any, *, fill_defaults: bool = True, compiled: tuple[Any, Any] | None = None
) -> dict[str, Any]:
    """The accepted form content, defaults applied and checked; raises :class:`InvalidAnswer` only.

    ``compiled``: :func:`compiled_schema` of this very ``schema``, when the caller kept it."""
    if not isinstance(content, dict):
        raise InvalidAnswer([(None, f"content must be an object, got {type(content).__name__}")], content)
    if not isinstance(schema, dict):
        raise InvalidAnswer([(None, "the requested schema is not an object")], content)
    answer: dict[str, Any] = apply_defaults(schema, content) if fill_defaults else content
    try:
        validator, fast = compiled if compiled is not None else _compiled(schema)
        if fast is not None and fast(answer):
            return answer
        errors = sorted(validator.iter_errors(answer), key=lambda e: [str(p) for p in e.absolute_path])
    except Exception as exc:  # a schema jsonschema cannot evaluate ($ref to nowhere, odd values...)
        raise _unevaluable(exc) from exc
    if errors:
        raise InvalidAnswer([_describe(e) for e in errors], answer)
    return answer


def field_problems(prop: dict[str, Any], value: Any) -> list[str]:
    """Why ``value`` does not fit one property schema (used to check defaults)."""
    schema = {"type": "object", "properties": {"v": prop}, "required": ["v"]}
    try:
        return [e.message for e in _validator(schema).iter_errors({"v": value})]
    except Exception as exc:
        return [_unevaluable(exc).reason]


def parse_result(
    raw: Any, *, mode: str, schema: dict[str, Any] | None = None, compiled: tuple[Any, Any] | None = None
) -> ElicitationResult[Any]:
    """An ``ElicitResult`` from the wire, checked for its mode; content validated for forms.

    The accepted result's ``data`` is the validated content dict; typed callers convert it.
    ``compiled``: :func:`compiled_schema` of ``schema``, when the caller kept it.
    """
    if not isinstance(raw, dict):
        raise InvalidAnswer([(None, "the answer must be an object")], raw)
    action = raw.get("action")
    content = raw.get("content")
    if action == "accept":
        if mode == "url":
            if content is not None:
                raise InvalidAnswer([(None, "a URL-mode accept carries no content")], raw)
            return AcceptedElicitation(data=None, content=None)
        if schema is None:
            raise InvalidAnswer([(None, "no schema to check the answer against")], raw)
        checked = validate_answer(schema, content if content is not None else {}, compiled=compiled)
        return AcceptedElicitation(data=checked, content=checked)
    if action in ("decline", "cancel"):
        if content is not None and content != {}:
            raise InvalidAnswer([(None, f"a {action} carries no content")], raw)
        return DeclinedElicitation() if action == "decline" else CancelledElicitation()
    raise InvalidAnswer([(None, f"unknown action {action!r}; expected accept, decline or cancel")], raw)
