"""A POST's quick wait for its first message (asgi._QuickWaits): one timer for every request
waiting, each woken by its stream's change or, undecided, within the quick wait's time."""

from __future__ import annotations

import asyncio
import time

from elicitkit.transports.http.asgi import _QuickWaits
from elicitkit.transports.http.streams import Stream


def test_a_change_wakes_its_wait_at_once_and_many_waits_share_one_timer() -> None:
    async def main() -> None:
        quick = _QuickWaits(10.0)
        streams = [Stream(f"r{n}", n) for n in range(50)]
        waits = [quick.wait(stream) for stream in streams]
        timers = [handle for handle in asyncio.get_running_loop()._scheduled if not handle.cancelled()]  # type: ignore[attr-defined]
        assert len(timers) == 1  # not one per request
        streams[7].push(b"{}", True)
        await asyncio.wait_for(waits[7], 1.0)  # long before the quick wait's end
        assert [wait.done() for wait in waits].count(True) == 1

    asyncio.run(main())


def test_an_undecided_wait_ends_between_half_and_all_of_the_quick_wait() -> None:
    async def main() -> None:
        quick = _QuickWaits(0.2)
        started = time.monotonic()
        await asyncio.wait_for(quick.wait(Stream("r1", 1)), 2.0)
        first = time.monotonic() - started
        assert 0.09 <= first <= 1.0  # (0.1 to 0.2 s; generous above for a loaded machine)
        # a later wait, while the timer runs, still ends in time; with none left, the timer stops
        later = time.monotonic()
        await asyncio.wait_for(quick.wait(Stream("r2", 2)), 2.0)
        assert time.monotonic() - later <= 1.0
        await asyncio.sleep(0.35)
        assert quick._timer is None

    asyncio.run(main())


def test_a_cancelled_wait_is_skipped_and_a_new_loop_starts_afresh() -> None:
    quick = _QuickWaits(0.1)

    async def first() -> None:
        wait = quick.wait(Stream("r1", 1))
        wait.cancel()  # (its request was cancelled): the tick must not touch it
        await asyncio.sleep(0.25)
        assert wait.cancelled()

    async def second() -> None:  # the same handler on another loop (a test's, say)
        await asyncio.wait_for(quick.wait(Stream("r2", 2)), 2.0)

    asyncio.run(first())
    asyncio.run(second())
