"""The kit's HTTP children (``testing/kit/serving.py``): each listens where its own system put it,
and its log keeps every line however often the test reads it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from elicitkit.testing.kit.serving import _append_only, child_env, start_http_child

BOOKING = f"{Path(__file__).with_name('booking.py')}:server"


def test_children_listen_on_the_port_they_chose_and_say_it() -> None:
    children = [start_http_child(BOOKING, child_env({"PYTHONUNBUFFERED": "1"})) for _ in range(2)]
    try:
        ports = [urlsplit(child.url).port for child in children]
        assert all(port for port in ports) and ports[0] != ports[1], ports
        for child in children:
            answer = httpx.get(child.url, headers={"accept": "text/event-stream"}, timeout=10)
            assert answer.status_code == 400  # (a GET without a session: this child's endpoint answered)
            assert child.process.poll() is None
            assert f"serving MCP at {child.url}" in child.output()
    finally:
        for child in children:
            child.stop()


def test_reading_the_log_never_moves_where_the_child_writes() -> None:
    with tempfile.TemporaryFile() as file:
        log = _append_only(file)
        child_fd = os.dup(log.fileno())  # what a child holds: a copy of the descriptor, the same offset
        try:
            os.write(child_fd, b"first\n")
            log.seek(0)  # the test reads its log...
            os.write(child_fd, b"second\n")  # ...while the child writes
            log.seek(0)
            assert log.read() == b"first\nsecond\n"
        finally:
            os.close(child_fd)
