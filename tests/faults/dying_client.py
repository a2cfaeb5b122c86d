"""A real elicitkit :class:`~elicitkit.Client` in a process of its own, for a test to SIGKILL.

    python tests/faults/dying_client.py TARGET TAG TIMEOUT

``TARGET`` is an ``http://`` URL, or ``stdio`` (the client then spawns ``fault_server.py``
itself, so the server is the child of the process that dies, as in real use). The client calls
``ask`` with ``TAG`` (and the question's ``TIMEOUT`` in seconds); its elicitation callback
prints ``PENDING <tag>`` and never answers, so the question is pending on the server when the
test kills this process.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio

from elicitkit import Client

SERVER = Path(__file__).resolve().parent / "fault_server.py"


async def main(target: str, tag: str, timeout: str) -> None:
    async def never_answer(request: Any) -> dict[str, Any]:
        print(f"PENDING {tag}", flush=True)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    server: Any = [sys.executable, str(SERVER), "stdio"] if target == "stdio" else target
    async with Client(server, elicitation_callback=never_answer, timeout=None) as client:
        print("CONNECTED", flush=True)
        await client.call_tool("ask", {"tag": tag, "timeout": float(timeout)})


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
