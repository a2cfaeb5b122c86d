"""Names of a package loaded with their module on first use (PEP 562).

``import elicitkit`` runs the ``__init__`` of ``auth`` and ``gateway`` (the error tree names
their errors); loading everything they export there would cost every process the whole OAuth
client and gateway. The package lists where each name lives; this makes its ``__getattr__`` and
``__dir__``. Type checkers see the names through the package's ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, homes: Mapping[str, str], public: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name in ``homes`` imported from its module
    the first time it is asked for, then kept in the package like an eager import."""
    space = sys.modules[package].__dict__
    listed = frozenset(public)

    def get(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        space[name] = value
        return value

    def names() -> list[str]:
        return sorted(set(space) | listed)

    return get, names
