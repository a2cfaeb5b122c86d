"""Blocking peers for the fuzzers: a spawned stdio server and an HTTP server, driven synchronously.

Hypothesis runs one example after another in a plain function, so these peers are plain
blocking code: a reader thread drains the child's stdout into a queue, and httpx's sync client
talks HTTP. Each peer can prove the server still works: ``ping()`` must be answered.
"""

from __future__ import annotations

import itertools
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

SERVER = Path(__file__).resolve().parent / "fuzz_server.py"
INIT_PARAMS = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}
# Codes a server may answer garbage with; -32603 (internal error) means a defect leaked out.
EXPECTED_CODES = frozenset({-32700, -32600, -32601, -32602, -32002, -32001, -32800})


class StdioPeer:
    """``fuzz_server.py stdio`` in a child process; lines in, decoded replies out."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.replies: queue.Queue[Any] = queue.Queue()
        self._pings = itertools.count()
        self._reader = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            try:
                self.replies.put(orjson.loads(line))
            except orjson.JSONDecodeError:
                self.replies.put(("not JSON", line))
        self.replies.put(("eof", b""))

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: Any) -> None:
        self.write(orjson.dumps(message) + b"\n")

    def ping(self, timeout: float = 10.0) -> list[Any]:
        """Ping; return every reply that came before its answer (the answers to the fuzz input)."""
        marker = f"fuzz-ping-{next(self._pings)}"
        self.send({"jsonrpc": "2.0", "id": marker, "method": "ping"})
        before: list[Any] = []
        while True:
            reply = self.replies.get(timeout=timeout)
            assert not isinstance(reply, tuple), f"the server broke the stream: {reply!r}"
            if isinstance(reply, dict) and reply.get("id") == marker and "method" not in reply:
                assert reply.get("result") == {}, reply
                return before
            before.append(reply)

    def initialize(self) -> None:
        self.send({"jsonrpc": "2.0", "id": "fuzz-init", "method": "initialize", "params": INIT_PARAMS})
        reply = self.replies.get(timeout=15)
        assert reply.get("id") == "fuzz-init" and "result" in reply, reply
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


@contextmanager
def stdio_server(stderr: IO[bytes]) -> Iterator[StdioPeer]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
    )
    try:
        peer = StdioPeer(process)
        peer.initialize()
        yield peer
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def check_reply(reply: Any) -> str:
    """A reply to fuzz input must be well-formed JSON-RPC, and an error must carry an expected code."""
    assert isinstance(reply, dict) and reply.get("jsonrpc") == "2.0", reply
    if "method" in reply:
        return f"server sent {reply['method']}"
    assert ("result" in reply) != ("error" in reply), reply
    if "error" in reply:
        code = reply["error"]["code"]
        assert code in EXPECTED_CODES, f"unexpected error code {code}: {reply}"
        return f"error {code}"
    return "result"
