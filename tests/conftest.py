"""Shared pytest configuration for the elicitkit test suite."""

from __future__ import annotations

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
