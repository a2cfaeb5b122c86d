"""Running a generated test file through pytest in-process (pytester), the way a user's suite runs."""

from __future__ import annotations

import gc

import pytest


def run_file(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    """Write ``source`` as ``test_shop.py`` and run pytest on it with ``args``."""
    pytester.makepyfile(test_shop=source)
    # Earlier tests' garbage (an asyncio task whose error nobody read logs from its finaliser)
    # goes now: collected during the nested run's ast.parse, CPython 3.11.7 fails that parse
    # ("AST constructor recursion depth mismatch") and pytest reports an INTERNALERROR.
    gc.collect()
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args)
