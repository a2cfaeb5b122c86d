"""The examples as the tests reach them: a fresh module each time, so each test starts from clean state."""

from __future__ import annotations

import importlib.util
import sys
from itertools import count
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
_fresh = count()


def load_example(relative: str) -> ModuleType:
    """``examples/<relative>`` imported under a new name (registered: dataclasses look it up)."""
    path = EXAMPLES / relative
    name = f"_example_{path.stem}_{next(_fresh)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def spec(relative: str, attr: str = "server") -> str:
    """The kit's name for an example's server: ``/abs/path/example.py:server`` (loaded afresh per connection)."""
    return f"{EXAMPLES / relative}:{attr}"
