"""Fixtures for the interop tests: HTTP server subprocesses, one per module and server.

stdio servers are spawned by the clients under test, whose context managers shut them down;
the HTTP servers here are stopped (terminate, then kill) when the module's tests are done.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .support import OFFICIAL_SERVER, OUR_SERVER, http_server_process


@pytest.fixture(scope="module")
def official_http_url() -> Iterator[str]:
    """A server written with the official SDK, over Streamable HTTP."""
    with http_server_process(OFFICIAL_SERVER) as url:
        yield url


@pytest.fixture(scope="module")
def our_http_url() -> Iterator[str]:
    """Our low-level server, over Streamable HTTP."""
    with http_server_process(OUR_SERVER) as url:
        yield url
