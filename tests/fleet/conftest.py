"""Every async fleet test runs on asyncio (anyio's pytest plugin)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.parent.name == "fleet" and "anyio" not in item.keywords:
            item.add_marker(pytest.mark.anyio)
