"""Descriptions from docstrings (Google, NumPy or reST style) through ``docstring_parser``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import docstring_parser


@dataclass(slots=True)
class Described:
    summary: str | None
    params: dict[str, str] = field(default_factory=dict)


def describe(fn: Callable[..., Any]) -> Described:
    """The function's description (everything but the parameter sections) and each parameter's."""
    raw = inspect.getdoc(fn)
    if not raw:
        return Described(None)
    parsed = docstring_parser.parse(raw)
    text = "\n\n".join(p for p in (parsed.short_description, parsed.long_description) if p)
    params = {p.arg_name: p.description for p in parsed.params if p.description}
    return Described(text or None, params)
