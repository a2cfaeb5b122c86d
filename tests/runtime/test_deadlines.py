"""Shared deadline timers: never early, at most one slot late, one timer per slot, nothing after clear."""

from __future__ import annotations

import asyncio

import pytest

from elicitkit.runtime.deadlines import MAX_SLOT, Deadlines

pytestmark = pytest.mark.anyio


class Item:
    __slots__ = ("due", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.due: float | None = None


@pytest.mark.parametrize("delay", [0.05, 0.2])
async def test_a_deadline_fires_never_early_and_at_most_a_slot_late(delay: float) -> None:
    loop = asyncio.get_running_loop()
    fired: dict[str, float] = {}
    deadlines = Deadlines(lambda item: fired.setdefault(item.name, loop.time()))
    started: dict[str, float] = {}
    for i in range(20):
        item = Item(f"i{i}")
        started[item.name] = loop.time()
        deadlines.add(item, delay, loop)
        await asyncio.sleep(0.003)  # spread them over several slots
    await asyncio.sleep(delay + 0.3)
    assert sorted(fired) == sorted(started)
    slot = delay / 64
    for name, at in fired.items():
        late = at - (started[name] + delay)
        assert late >= -0.002, f"{name} fired {-late:.4f} s early"  # the loop's clock resolution at most
        assert late < slot + 0.25, f"{name} fired {late:.3f} s late"  # (a busy machine adds its own delay)
    assert len(deadlines) == 0 and deadlines.timers() == 0


async def test_many_deadlines_share_a_timer_and_removed_ones_never_fire() -> None:
    loop = asyncio.get_running_loop()
    fired: list[str] = []
    deadlines = Deadlines(lambda item: fired.append(item.name))
    items = [Item(f"i{i}") for i in range(1000)]
    scheduled_before = len(loop._scheduled)  # type: ignore[attr-defined]
    for item in items:
        deadlines.add(item, 600.0, loop)
    # 600 s deadlines round up to whole seconds: 1,000 added at once fall in a slot or two
    assert deadlines.timers() <= 2
    assert len(loop._scheduled) - scheduled_before <= 2  # type: ignore[attr-defined]
    assert len(deadlines) == 1000
    assert all(item.due is not None and item.due % MAX_SLOT == 0 for item in items)
    for item in items[:999]:
        deadlines.remove(item)
        assert item.due is None
    assert len(deadlines) == 1
    deadlines.remove(items[0])  # removing twice is harmless
    assert len(deadlines) == 1
    deadlines.clear()
    assert len(deadlines) == 0 and deadlines.timers() == 0 and items[999].due is None
    assert fired == []


async def test_an_item_can_be_given_a_later_deadline_while_firing() -> None:
    loop = asyncio.get_running_loop()
    fired: list[float] = []
    done = asyncio.Event()

    def fire(item: Item) -> None:
        fired.append(loop.time())
        if len(fired) < 3:
            deadlines.add(item, 0.02, loop)  # extended (a person was answering meanwhile)
        else:
            done.set()

    deadlines = Deadlines(fire)
    item = Item("x")
    started = loop.time()
    deadlines.add(item, 0.02, loop)
    await asyncio.wait_for(done.wait(), 5)
    assert len(fired) == 3 and fired[-1] - started >= 0.06 - 0.003
    assert item.due is None and deadlines.timers() == 0


async def test_adding_again_moves_an_item_to_its_new_slot() -> None:
    loop = asyncio.get_running_loop()
    fired: list[str] = []
    deadlines = Deadlines(lambda item: fired.append(item.name))
    item = Item("moved")
    deadlines.add(item, 600.0, loop)
    first = item.due
    deadlines.add(item, 0.01, loop)
    assert item.due != first and len(deadlines) == 1
    await asyncio.sleep(0.1)
    assert fired == ["moved"]
    deadlines.clear()


async def test_clear_cancels_every_timer() -> None:
    loop = asyncio.get_running_loop()
    fired: list[str] = []
    deadlines = Deadlines(lambda item: fired.append(item.name))
    for i in range(10):
        deadlines.add(Item(f"i{i}"), 0.01 * (i + 1), loop)
    deadlines.clear()
    await asyncio.sleep(0.2)
    assert fired == []
