"""SIGTERM and SIGINT stop an HTTP server whatever its tools are doing (``serve.py``,
``transports/shutdown.py``): in-flight requests get a grace period, then their sessions end; a
tool that will not stop does not keep the process alive."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from kit.processes import serve_on_free_port
from kit.raw import INITIALIZED, call, init_request

from ._wire import ACCEPT_BOTH, post_headers, request_bytes

STUCK_SERVER = Path(__file__).resolve().parents[1] / "peers" / "stuck_server.py"
GRACE = 0.5
# The grace, the second before uvicorn cancels what is left, rounded up, and the watchdog's 3 s.
FORCED_BY = 2 + 3
SLACK = 4.0  # a loaded CI machine


@contextmanager
def _calling(tool: str, options: dict[str, Any]) -> Iterator[tuple[subprocess.Popen[bytes], IO[bytes]]]:
    """A stuck server with ``tool`` running in an open request; yields (process, log)."""
    argv = lambda port: [sys.executable, str(STUCK_SERVER), "http", str(port), json.dumps(options)]  # noqa: E731
    with serve_on_free_port(argv, "stuck_server.py") as (port, proc, log):
        url = f"http://127.0.0.1:{port}/mcp"
        with httpx.Client(timeout=10) as http:
            headers = {"Accept": ACCEPT_BOTH, "Content-Type": "application/json"}
            init = http.post(url, json=init_request(elicitation={}), headers=headers)
            session_id = init.headers["mcp-session-id"]
            headers |= {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}
            assert http.post(url, json=INITIALIZED, headers=headers).status_code == 202
        with socket.create_connection(("127.0.0.1", port)) as sock:  # the call stays open: nobody answers
            sock.sendall(request_bytes("POST", post_headers(port, session_id), json.dumps(call(1, tool)).encode()))
            deadline = time.monotonic() + 15
            while f"started:{tool}".encode() not in _output(log) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert f"started:{tool}".encode() in _output(log), _output(log)
            time.sleep(0.2)  # a parked question is on the wire by now
            yield proc, log


def _output(log: IO[bytes]) -> bytes:
    log.seek(0)
    return log.read()


def _stop(proc: subprocess.Popen[bytes], sig: signal.Signals, bound: float) -> float:
    started = time.monotonic()
    proc.send_signal(sig)
    try:
        proc.wait(timeout=bound + 10)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the server ignored {sig.name}")
    return time.monotonic() - started


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("tool", ["forever", "ask"])
def test_defect_16_http_server_stops_while_a_tool_waits(tool: str, sig: signal.Signals) -> None:
    """A tool awaiting forever, or parked on a person's answer: cancelled after the grace."""
    with _calling(tool, {"shutdown_grace": GRACE}) as (proc, log):
        took = _stop(proc, sig, GRACE + SLACK)
        assert proc.returncode == 0, _output(log)
        assert took < GRACE + SLACK, took
        assert b"did not stop" not in _output(log)  # a clean shutdown, no watchdog


@pytest.mark.parametrize("tool", ["stubborn", "spin"])
def test_defect_16_http_server_stops_even_if_a_tool_will_not(tool: str) -> None:
    """A tool that swallows its cancellation (``stubborn``) or asks again and again (``spin``)."""
    with _calling(tool, {"shutdown_grace": GRACE}) as (proc, log):
        took = _stop(proc, signal.SIGTERM, FORCED_BY + SLACK)
        assert proc.returncode == 0, _output(log)
        assert took < FORCED_BY + SLACK, took
        assert b"did not stop after the shutdown signal" in _output(log)


def test_defect_16_second_signal_skips_the_grace() -> None:
    with _calling("forever", {"shutdown_grace": 60}) as (proc, log):
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        took = _stop(proc, signal.SIGTERM, SLACK)
        assert proc.returncode == 0, _output(log)
        assert took < SLACK, took
