"""The official SDK's elicitation server (tests/interop/peers) plus ``wait``, for the gateway's
cancellation cells: it waits until cancelled and leaves ``cancelled-MARK`` in
``$GATEWAY_TEST_STATE`` when that happens. Nothing here imports elicitkit."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "interop" / "peers"))

from official_elicitation_server import main, server

STATE = Path(os.environ.get("GATEWAY_TEST_STATE", "."))


@server.tool(description="Wait until cancelled.")
async def wait(mark: str) -> str:
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        (STATE / f"cancelled-{mark}").write_text("cancelled")
        raise
    return "never"


if __name__ == "__main__":
    main(sys.argv)
