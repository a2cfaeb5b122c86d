"""A stdio server that prints a banner on stdout before it speaks JSON-RPC (a common mistake)."""

from __future__ import annotations

import sys
from pathlib import Path

for line in range(8):
    print(f"Starting my server... banner line {line}")
sys.stdout.flush()
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from tools_basic import server  # noqa: E402 - after the banner, on purpose

server.run()
