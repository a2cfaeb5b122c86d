"""Fixtures and settings for the fuzzers: the real servers they talk to, and the example budget."""

from __future__ import annotations

import pytest

from . import _budget


def pytest_configure(config: pytest.Config) -> None:
    _budget.LONG = bool(config.getoption("--fuzz-long", default=False))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/fuzz/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.fuzz)
            if _budget.LONG:  # 50x the inputs: the suite-wide 120 s per test no longer fits
                item.add_marker(pytest.mark.timeout(_budget.LONG_TIMEOUT))
