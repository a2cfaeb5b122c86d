"""One ``fault_server.py`` over HTTP for the whole fault suite (each test measures its own baseline)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._support import http_server


@pytest.fixture(scope="session")
def url() -> Iterator[str]:
    with http_server() as served:
        yield served


@pytest.fixture(scope="session")
def short_idle_url() -> Iterator[str]:
    """A second server whose idle sessions expire after 2.5 s (issue 12 #6), for the test that
    checks dead clients leave nothing behind; the shared one keeps its sessions meanwhile."""
    with http_server(idle_timeout=2.5) as served:
        yield served
