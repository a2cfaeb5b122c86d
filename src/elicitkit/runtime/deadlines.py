"""Many deadlines on few timers: the timeouts of a peer's outgoing requests.

A server may hold thousands of questions open while people answer them, each with a timeout
of minutes. One event-loop timer per question costs a ``TimerHandle``, its argument tuple, a
bound method and a float (about 250 bytes), and a question answered early leaves its cancelled
handle in the loop's heap until its time. Here deadlines share a timer per *slot*: a deadline
is rounded up to a multiple of ``delay / 64`` (at most 1 s, at least 1 ms), so it fires never
early and at most that much late (a 600 s question: within a second; a 0.1 s one: within
2 ms), and everything due in one slot is one dict entry.

A slot's timer is not cancelled when its slot empties: the next deadline rounded to the same
slot (the next call within that second) reuses it, so a request pays a dict insert and
removal, not a timer. :meth:`Deadlines.clear` (the peer closing) cancels every timer, so no
timer keeps a closed peer alive.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections.abc import Callable
from typing import Protocol, TypeVar

# Timers run in a context of their own: a request's context holds its scope (and through it
# the session), which a timer must not keep alive until its time. The callbacks read no
# context variable.
_TIMER_CONTEXT = contextvars.Context()

MAX_SLOT = 1.0  # seconds: the most a deadline fires late
MIN_SLOT = 0.001
_SLOTS_PER_DELAY = 64  # a deadline fires at most 1/64 of its delay late (under MAX_SLOT)


class Timed(Protocol):
    """What has a deadline: the slot it waits in (None: none)."""

    due: float | None


T = TypeVar("T", bound=Timed)


class _Slot:
    __slots__ = ("due", "handle", "members")

    def __init__(self, due: float) -> None:
        self.due = due
        self.members: dict[Timed, None] = {}  # (a dict: about half a set's bytes per member)
        self.handle: asyncio.TimerHandle | None = None


class Deadlines:
    """Deadlines of many items, ``fire(item)`` called for each at (or just after) its time."""

    __slots__ = ("_fire", "_slots", "_step", "_step_delay")

    def __init__(self, fire: Callable[[T], None]) -> None:
        self._fire: Callable[[Timed], None] = fire  # type: ignore[assignment]
        self._slots: dict[float, _Slot] = {}
        # The slot width of the last delay seen: a peer's requests nearly all share one timeout.
        self._step_delay = -1.0
        self._step = MAX_SLOT

    def add(self, item: Timed, delay: float, loop: asyncio.AbstractEventLoop) -> None:
        """``fire(item)`` in ``delay`` seconds (rounded up to its slot) unless removed first."""
        if item.due is not None:
            self.remove(item)
        if delay == self._step_delay:
            step = self._step
        else:
            step = self._step = min(MAX_SLOT, max(MIN_SLOT, delay / _SLOTS_PER_DELAY))
            self._step_delay = delay
        due = math.ceil((loop.time() + delay) / step) * step
        slot = self._slots.get(due)
        if slot is None:
            slot = self._slots[due] = _Slot(due)
            slot.handle = loop.call_at(due, self._expire, due, context=_TIMER_CONTEXT)
        slot.members[item] = None
        item.due = slot.due  # (the slot's own float: its members share it)

    def remove(self, item: Timed) -> None:
        """No deadline for ``item`` any more (its slot and timer stay for others in it)."""
        due = item.due
        if due is None:
            return
        item.due = None
        slot = self._slots.get(due)
        if slot is not None:
            slot.members.pop(item, None)

    def clear(self) -> None:
        """Forget every deadline and cancel every timer (nothing fires after this)."""
        slots, self._slots = self._slots, {}
        for slot in slots.values():
            if slot.handle is not None:
                slot.handle.cancel()
            for item in slot.members:
                item.due = None

    def __len__(self) -> int:
        """Items with a deadline (for tests and introspection)."""
        return sum(len(slot.members) for slot in self._slots.values())

    def timers(self) -> int:
        """Timers armed (one per slot)."""
        return len(self._slots)

    def _expire(self, due: float) -> None:
        slot = self._slots.pop(due, None)
        if slot is None:
            return
        for item in slot.members:
            item.due = None
        for item in slot.members:
            self._fire(item)  # may add it again (to a later slot)
