"""The last resort of a server told to stop: exit even if a tool will not.

A tool can swallow its cancellation, block the event loop, or sit in a thread that nothing can
interrupt; then a clean shutdown never finishes, and only SIGKILL would end the process. After a
SIGINT or SIGTERM the runners arm :func:`exit_after`: if the process is still alive when it
fires, it says so on stderr and leaves at once with status 0 (it was asked to stop, and it did).
"""

from __future__ import annotations

import os
import threading

FORCE_EXIT_AFTER = 3.0  # seconds a cancelled tool gets to unwind before the process leaves anyway


def exit_after(seconds: float, what: str) -> threading.Timer:
    """Arm a daemon timer that ends the process in ``seconds`` unless it has ended by then.

    A thread, not a task: it must fire while the event loop is stuck. ``what`` is what was still
    running, for the line on stderr.
    """
    timer = threading.Timer(seconds, _leave, args=(what,))
    timer.daemon = True
    timer.name = "elicitkit-force-exit"
    timer.start()
    return timer


def _leave(what: str) -> None:
    message = f"elicitkit: {what} did not stop after the shutdown signal; exiting anyway\n"
    try:  # straight to the descriptor: the stuck thread may hold sys.stderr's lock
        os.write(2, message.encode())
    finally:
        os._exit(0)
