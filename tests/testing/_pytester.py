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


# The server under test in the kit's pytester runs: two questions, each answer shaping the result.
SHOP_SERVER = """
import re
import pytest
from pydantic import BaseModel
from elicitkit import AcceptedElicitation, Context, Server
from elicitkit.testing.kit import accept, cancel, decline

server = Server("shop")


class Size(BaseModel):
    x: int


@server.tool()
async def order(ctx: Context) -> str:
    size = await ctx.elicit("How big?", Size)
    if not isinstance(size, AcceptedElicitation):
        return f"no order ({size.action})"
    sure = await ctx.elicit(f"Order size {size.data.x}?", bool)
    return "ordered" if isinstance(sure, AcceptedElicitation) and sure.data else "not ordered"
"""
