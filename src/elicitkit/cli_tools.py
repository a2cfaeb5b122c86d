"""What ``elicitkit call SERVER`` shows of a server's tools: each one's arguments, in words or as JSON.

A person deciding how to call a tool needs its parameters (type, required, default, allowed
values) as much as its name; a script needs the same as data. Descriptions are shown as
plain text: reST markup from Python docstrings (````date````, ``:func:`x```) is taken out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from elicitkit.client.results import Tool

_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`]+)`")  # :func:`name`, :class:`~a.B`
_LITERAL = re.compile(r"``([^`]+)``")


def plain_text(text: str) -> str:
    """``text`` without reST inline markup: ````x```` -> ``x``, ``:role:`x``` -> ``x``."""
    return _LITERAL.sub(r"\1", _ROLE.sub(lambda m: m.group(1).rsplit(".", 1)[-1], text))


def _type_words(prop: dict[str, Any]) -> str:
    """A parameter's type, as a reader says it: ``integer``, ``string or null``, ``list of string``."""
    kind = prop.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array":
        items = prop.get("items")
        return f"list of {_type_words(items)}" if isinstance(items, dict) and items else "list"
    if isinstance(kind, str):
        return kind
    options = [*prop.get("anyOf", []), *prop.get("oneOf", [])]
    if options:
        return " or ".join(_type_words(o) for o in options if isinstance(o, dict))
    if "enum" in prop:
        return "one of the values below"
    return "any JSON value"


def parameters(tool: Tool) -> list[dict[str, Any]]:
    """Each parameter of ``tool``: name, type (in words), required, default, choices, description."""
    schema = tool.input_schema or {}
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    found: list[dict[str, Any]] = []
    for name, prop in props.items():
        prop = prop if isinstance(prop, dict) else {}
        entry: dict[str, Any] = {"name": name, "type": _type_words(prop), "required": name in required}
        if "default" in prop:
            entry["default"] = prop["default"]
        choices = prop.get("enum") or [o.get("const") for o in prop.get("anyOf", []) if isinstance(o, dict)]
        choices = [c for c in choices if c is not None]
        if choices:
            entry["choices"] = choices
        title = prop.get("title")
        if title == name.replace("_", " ").title():  # pydantic's title from the name says nothing new
            title = None
        description = prop.get("description") or title
        if description:
            entry["description"] = plain_text(str(description))
        found.append(entry)
    return found


def describe_parameter(entry: dict[str, Any]) -> str:
    """One line: ``party_size: integer, required -- How many people``."""
    words = [entry["type"]]
    if entry["required"]:
        words.append("required")
    if "default" in entry:
        words.append(f"default {json.dumps(entry['default'], ensure_ascii=False)}")
    if "choices" in entry:
        words.append("one of " + ", ".join(json.dumps(c, ensure_ascii=False) for c in entry["choices"]))
    line = f"{entry['name']}: " + ", ".join(words)
    if "description" in entry:
        line += f" -- {entry['description']}"
    return line


def tool_lines(tool: Tool) -> list[str]:
    """A tool as the listing prints it: name and first description line, then one line per argument."""
    summary = plain_text(tool.description or "").strip().splitlines()
    lines = [f"  {tool.name}" + (f"  {summary[0]}" if summary else "")]
    params = parameters(tool)
    lines += [f"      {describe_parameter(p)}" for p in params] or ["      (no arguments)"]
    return lines


def tool_json(tool: Tool) -> dict[str, Any]:
    """A tool as ``--json`` lists it: the wire form, plus ``parameters`` as :func:`parameters` reads them."""
    data: dict[str, Any] = tool.model_dump(by_alias=True, exclude_none=True)
    data["parameters"] = parameters(tool)
    return data
