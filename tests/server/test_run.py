"""``server.run(...)`` in a real process: serves, then stops cleanly on SIGINT / SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from kit.processes import accepts_connections, free_port, stop_process

SERVER = """
import sys
from elicitkit import Server

server = Server("runner")

@server.tool()
def hello() -> str:
    return "hi"

transport = sys.argv[1]
if transport == "http":
    server.run("http", port=int(sys.argv[2]))
else:
    server.run()
"""


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], deadline: float = 20.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.stderr.read() if proc.stderr else b''!r}")
        if accepts_connections(port):
            return
        time.sleep(0.05)
    raise AssertionError("server never started listening")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_http_server_stops_cleanly_on_signal(sig: signal.Signals) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVER, "http", str(port)], stderr=subprocess.PIPE)
    try:
        _wait_for_port(port, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=15)
    finally:
        stop_process(proc)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err, err.decode()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stdio_server_stops_cleanly_on_signal(sig: signal.Signals) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        proc.stdin.flush()
        assert b'"id":1' in proc.stdout.readline()  # serving
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=15)
    finally:
        stop_process(proc)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err, err.decode()


def test_stdio_server_exits_when_stdin_closes() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _, err = proc.communicate(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', timeout=15)
    assert proc.returncode == 0, err.decode()
