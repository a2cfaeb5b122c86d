"""Helpers for the interop tests: where the peer scripts are, and HTTP server subprocesses.

Every process started here is terminated (then killed) on the way out, whatever happened.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

PEERS = Path(__file__).parent / "peers"
OFFICIAL_SERVER = PEERS / "official_server.py"
OUR_SERVER = PEERS / "our_lowlevel_server.py"

STARTUP_TIMEOUT = 15.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def stop_process(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """SIGTERM, wait, then SIGKILL: never leave a server behind."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace)


@contextlib.contextmanager
def http_server_process(script: Path) -> Iterator[str]:
    """Run ``script http PORT`` on a free port; yield its MCP URL once it accepts connections."""
    with tempfile.TemporaryFile() as log:
        for _attempt in range(3):  # a free port can be taken between probing and binding it
            port = free_port()
            proc = subprocess.Popen(
                [sys.executable, str(script), "http", str(port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                deadline = time.monotonic() + STARTUP_TIMEOUT
                while proc.poll() is None and time.monotonic() < deadline and not accepts_connections(port):
                    time.sleep(0.05)
                if proc.poll() is not None:
                    continue  # died while starting (port clash?): try another port
                if not accepts_connections(port):
                    break  # alive but not serving: give up
                yield f"http://127.0.0.1:{port}/mcp"
                return
            finally:
                stop_process(proc)
        log.seek(0)
        output = log.read().decode(errors="replace")
    pytest.fail(f"{script.name} did not start serving HTTP; its output:\n{output[-4000:]}")
