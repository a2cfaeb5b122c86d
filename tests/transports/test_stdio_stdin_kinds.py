"""A stdio server ends cleanly whatever its stdin is: /dev/null, a regular file, a pipe."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tools_basic.py"
INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
)


def test_dev_null_stdin_is_end_of_input() -> None:
    with open("/dev/null", "rb") as devnull:
        done = subprocess.run([sys.executable, str(EXAMPLE)], stdin=devnull, capture_output=True, timeout=20)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""


def test_regular_file_stdin_is_served_then_ends(tmp_path: Path) -> None:
    script = tmp_path / "in.jsonl"
    script.write_bytes(INIT)
    with open(script, "rb") as stdin:
        done = subprocess.run([sys.executable, str(EXAMPLE)], stdin=stdin, capture_output=True, timeout=20)
    assert done.returncode == 0, done.stderr.decode()
    assert b'"id":1' in done.stdout and b'"protocolVersion":"2025-11-25"' in done.stdout
