"""Fixtures the gateway tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def state(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder the backend scripts leave their marks in (``$GATEWAY_TEST_STATE``), one per module."""
    where = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GATEWAY_TEST_STATE", str(where))
        yield where
