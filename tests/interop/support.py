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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

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
def serve_on_free_port(
    argv_for_port: Callable[[int], list[str]],
    name: str,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[tuple[int, subprocess.Popen[bytes], IO[bytes]]]:
    """Run ``argv_for_port(port)`` on a free port; yield (port, process, log) once it accepts connections.

    Stopped on the way out (SIGTERM, then SIGKILL) unless the caller did already.
    """
    with tempfile.TemporaryFile() as log:
        for _attempt in range(3):  # a free port can be taken between probing and binding it
            port = free_port()
            proc = subprocess.Popen(
                argv_for_port(port), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
            try:
                deadline = time.monotonic() + STARTUP_TIMEOUT
                while proc.poll() is None and time.monotonic() < deadline and not accepts_connections(port):
                    time.sleep(0.05)
                if proc.poll() is not None:
                    continue  # died while starting (port clash?): try another port
                if not accepts_connections(port):
                    break  # alive but not serving: give up
                yield port, proc, log
                return
            finally:
                stop_process(proc)
        log.seek(0)
        output = log.read().decode(errors="replace")
    pytest.fail(f"{name} did not start serving HTTP; its output:\n{output[-4000:]}")


@contextlib.contextmanager
def http_server_process(script: Path) -> Iterator[str]:
    """Run ``script http PORT`` on a free port; yield its MCP URL once it accepts connections."""
    with serve_on_free_port(lambda port: [sys.executable, str(script), "http", str(port)], script.name) as served:
        yield f"http://127.0.0.1:{served[0]}/mcp"
