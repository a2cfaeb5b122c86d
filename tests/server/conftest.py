"""Fixtures for the server-framework tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """``pytest.mark.anyio`` tests here run on asyncio."""
    return "asyncio"
