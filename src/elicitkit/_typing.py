"""Reading type hints: the one helper every layer that inspects annotations shares."""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin


def unwrap_annotated(annotation: Any) -> tuple[Any, list[Any]]:
    """``Annotated[T, a, b]`` -> ``(T, [a, b])``, flattening nested ``Annotated``; else ``(T, [])``."""
    extras: list[Any] = []
    while get_origin(annotation) is Annotated:
        annotation, *more = get_args(annotation)
        extras.extend(more)
    return annotation, extras
