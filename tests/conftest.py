"""Shared pytest configuration for the elicitkit test suite."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Generator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Async tests (``pytest.mark.anyio``) run on asyncio only."""
    return "asyncio"


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--fuzz-long``: the property-based fuzzers in tests/fuzz try many more inputs."""
    parser.addoption(
        "--fuzz-long",
        action="store_true",
        default=False,
        help="run the hypothesis fuzzers in tests/fuzz with 50x their default number of examples",
    )
    parser.addoption(
        "--slow",
        action="store_true",
        default=False,
        help="also run the tests marked slow (the fleet's 20x loop, 10,000-task sweeps and streams)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run only with ``--slow`` (scripts/test.sh does not pass it)."""
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


IN_LOOP_SHARE = 0.9  # of a test's timeout, after which its event loop cancels it itself


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    """An async test that overruns ends by a cancel in its own loop, just before pytest-timeout.

    pytest-timeout's SIGALRM raises wherever the main thread is; under asyncio that can be inside
    some background task's step, which keeps the exception to itself, and the run hangs for good.
    A cancel scope in the loop ends the test cleanly instead, with a traceback of where it waited.
    """
    test = pyfuncitem.obj
    limit = _timeout_of(pyfuncitem)
    if not (inspect.iscoroutinefunction(test) and "anyio_backend" in pyfuncitem.funcargs and limit):
        return (yield)

    @functools.wraps(test)
    async def bounded(*args: Any, **kwargs: Any) -> Any:
        # asyncio's own timeout, not an anyio scope: fixtures may hold anyio scopes of this task
        async with asyncio.timeout(limit * IN_LOOP_SHARE):
            return await test(*args, **kwargs)

    pyfuncitem.obj = bounded
    try:
        return (yield)
    finally:
        pyfuncitem.obj = test


def _timeout_of(item: pytest.Function) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    configured = item.config.getini("timeout")
    return float(configured) if configured else 0.0
