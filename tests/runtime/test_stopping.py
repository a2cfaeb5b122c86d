"""stop_tasks: a task that loses a cancel is cancelled again; the stopper's own cancel propagates."""

from __future__ import annotations

import asyncio
import logging

import pytest

from elicitkit.runtime import stopping
from elicitkit.runtime.stopping import stop_tasks

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def loses_cancels(lost: int | list[int], cancels_seen: list[int]) -> None:
    """Waits forever, dropping its first ``lost`` cancels (a one-item list: read at each cancel;
    below 0: every one): what a library does when Python 3.11's ``asyncio.wait_for`` swallows a
    cancel that arrives as the awaitable it wraps completes."""
    while True:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancels_seen.append(1)
            budget = lost[0] if isinstance(lost, list) else lost
            if 0 <= budget < len(cancels_seen):
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr]


async def test_a_task_that_loses_cancels_is_cancelled_until_it_ends() -> None:
    seen: list[int] = []
    task = asyncio.create_task(loses_cancels(3, seen))
    await asyncio.sleep(0)
    await asyncio.wait_for(stop_tasks([task], recancel_every=0.01), 5)
    assert task.cancelled() and len(seen) == 4


async def test_one_cancel_is_not_enough_for_such_a_task() -> None:
    """The defect stop_tasks exists for: cancel once and await, and the wait never ends."""
    seen: list[int] = []
    task = asyncio.create_task(loses_cancels(1, seen))
    await asyncio.sleep(0)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=0.2)
    assert not done and seen == [1]
    await stop_tasks([task], recancel_every=0.01)
    assert task.cancelled()


async def test_the_stoppers_own_cancel_propagates() -> None:
    seen: list[int] = []
    budget = [-1]
    stubborn = asyncio.create_task(loses_cancels(budget, seen))
    await asyncio.sleep(0)
    stopper = asyncio.create_task(stop_tasks([stubborn], recancel_every=0.01))
    await asyncio.sleep(0.05)
    assert len(seen) >= 2  # cancelled again and again meanwhile
    stopper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopper
    assert stopper.cancelled() and not stubborn.done()
    budget[0] = 0  # the next cancel goes through
    await stop_tasks([stubborn])
    assert stubborn.cancelled()


async def test_done_tasks_and_their_errors_are_fine(caplog: pytest.LogCaptureFixture) -> None:
    async def fails() -> None:
        raise RuntimeError("on its way out")

    failed = asyncio.create_task(fails())
    finished = asyncio.create_task(asyncio.sleep(0))
    await asyncio.sleep(0.01)
    with caplog.at_level(logging.DEBUG, logger="elicitkit.runtime"):
        await stop_tasks([failed, finished])
    assert "raised on its way out" in caplog.text  # retrieved, so asyncio never warns about it
    await stop_tasks([])


async def test_a_task_that_will_not_end_is_named_in_the_log(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stopping, "SLOW_STOP", 0.05)
    seen: list[int] = []
    task = asyncio.create_task(loses_cancels(20, seen), name="stubborn-one")
    await asyncio.sleep(0)
    with caplog.at_level(logging.WARNING, logger="elicitkit.runtime"):
        await stop_tasks([task], recancel_every=0.01)
    assert caplog.text.count("still stopping") == 1 and "stubborn-one" in caplog.text
    assert task.cancelled()
