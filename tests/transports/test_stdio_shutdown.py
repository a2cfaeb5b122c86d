"""SIGTERM stops a stdio server whatever its tool is doing (``_until_signal`` and
``transports/shutdown.py``): cancelled at once, and if the tool will not stop, the process
leaves anyway a few seconds later."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

STUCK_SERVER = Path(__file__).resolve().parent / "peers" / "stuck_server.py"
FORCED_BY = 3.0  # transports.shutdown.FORCE_EXIT_AFTER
SLACK = 4.0


def _send(proc: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


@pytest.mark.parametrize("tool", ["forever", "ask", "stubborn", "spin"])
def test_defect_16_stdio_server_stops_on_sigterm_whatever_the_tool_does(tool: str, tmp_path: Path) -> None:
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, str(STUCK_SERVER), "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t"}}
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert proc.stdout is not None and b'"id":1' in proc.stdout.readline()
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
        deadline = time.monotonic() + 15
        while f"started:{tool}" not in stderr_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)

        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=FORCED_BY + SLACK + 10)
        except subprocess.TimeoutExpired:
            pytest.fail("the server ignored SIGTERM")
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr_path.read_text()
    assert took < FORCED_BY + SLACK, took
