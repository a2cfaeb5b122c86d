"""Helpers for the interop tests: where the peer scripts are, and our server as an HTTP subprocess."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from kit.processes import serve_on_free_port

PEERS = Path(__file__).parent / "peers"
OFFICIAL_SERVER = PEERS / "official_server.py"
OUR_SERVER = PEERS / "our_lowlevel_server.py"


@contextlib.contextmanager
def http_server_process(script: Path) -> Iterator[str]:
    """Run ``script http PORT`` on a free port; yield its MCP URL once it accepts connections."""
    with serve_on_free_port(lambda port: [sys.executable, str(script), "http", str(port)], script.name) as served:
        yield f"http://127.0.0.1:{served[0]}/mcp"
