"""Stopping background tasks for certain: cancel, wait, and cancel again until they have ended.

One ``task.cancel()`` is not always enough. Python 3.11's ``asyncio.wait_for`` can drop a cancel
that arrives just as the awaitable it wraps completes (fixed in 3.12), and libraries write through
it: redis-py does, for every command. We saw the Redis task relay, re-subscribing after Redis
restarted, lose its cancel and go back to reading forever (6 times in 760 restarts); whatever
awaited it once hung with it. :func:`stop_tasks` cancels again at a short interval until every
task is done.

Whoever stops a task may be cancelled meanwhile: that cancellation propagates (the tasks have
been asked to stop and carry on ending by themselves); it is never swallowed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

__all__ = ["RECANCEL_EVERY", "stop_tasks"]

logger = logging.getLogger("elicitkit.runtime")

RECANCEL_EVERY = 0.25  # seconds between cancels of a task that has not ended yet
SLOW_STOP = 5.0  # seconds after which a task that has not ended is named in the log, once


async def stop_tasks(tasks: Iterable[asyncio.Future[Any]], *, recancel_every: float = RECANCEL_EVERY) -> None:
    """Cancel ``tasks`` and return once every one has ended; what they raised on the way out is logged."""
    every = list(tasks)
    pending = {task for task in every if not task.done()}
    waited = 0.0
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=recancel_every)  # our own cancel propagates
        waited += recancel_every
        if pending and waited - recancel_every < SLOW_STOP <= waited:
            logger.warning("still stopping after %.0f s (cancelled again and again): %s", SLOW_STOP, pending)
    for task in every:
        if not task.cancelled() and task.exception() is not None:
            logger.debug("a stopped task raised on its way out", exc_info=task.exception())
