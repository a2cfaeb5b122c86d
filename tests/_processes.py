"""Stopping a spawned server the way a real client does: close stdin, wait, then kill."""

from __future__ import annotations

from contextlib import suppress

import anyio
from anyio.abc import Process


async def stop_child(process: Process, grace: float = 5.0) -> None:
    """Shielded, so a cancelled test still leaves no process behind."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            assert process.stdin is not None
            with suppress(anyio.BrokenResourceError, OSError):
                await process.stdin.aclose()
            with anyio.move_on_after(grace):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
        await process.aclose()
