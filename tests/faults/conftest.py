"""One ``fault_server.py`` over HTTP for the whole fault suite (each test measures its own baseline)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._support import http_server


@pytest.fixture(scope="session")
def url() -> Iterator[str]:
    with http_server() as served:
        yield served
