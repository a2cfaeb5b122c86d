"""Waiting for a URL question's completion notice in the background, without taking the terminal.

A URL question is accepted as soon as the person agrees (the server waits for the person,
not for the client); the notice that they finished comes later. The wait shows a spinner,
one at a time, and only while no form needs the terminal: :class:`Screen` says who owns it,
and a form that arrives makes the spinner step aside until the form is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from prompt_toolkit.input import Input
from rich.text import Text

from elicitkit.client.handlers.terminal.dialogue import report_line
from elicitkit.client.handlers.terminal.view import View
from elicitkit.elicitation.requests import UrlRequest

__all__ = ["Screen", "Watch", "wait_for_completion"]

logger = logging.getLogger("elicitkit.client.handlers.terminal")


class Screen:
    """Who owns the terminal: one form at a time, and spinners only while no form is waiting."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.wanted = asyncio.Event()  # set while a form shows or waits to show
        self.idle = asyncio.Event()
        self.idle.set()
        self._forms = 0

    @contextlib.asynccontextmanager
    async def form(self) -> AsyncIterator[None]:
        self._forms += 1
        self.wanted.set()
        self.idle.clear()
        try:
            async with self.lock:
                yield
        finally:
            self._forms -= 1
            if self._forms == 0:
                self.wanted.clear()
                self.idle.set()


@dataclass
class Watch:
    """One URL question whose completion notice is awaited in the background."""

    request: UrlRequest
    server: str
    domain: str


async def wait_for_completion(
    watch: Watch,
    *,
    screen: Screen,
    spinner: asyncio.Lock,
    view: View,
    keys: Input | None,
    timeout: float | None,
) -> None:
    """Wait up to ``timeout`` for ``watch``'s notice, spinning whenever the screen is free; report how it ended.

    ``spinner`` lets one wait show at a time; ``keys`` (None: do not listen) are the status
    line's choices: Enter keeps waiting in the background (quietly; the outcome is still
    reported), ``r`` retries now (the page counts as finished, so a call waiting on it goes
    on), ``c`` or Esc stops waiting.
    """
    done = asyncio.ensure_future(watch.request.wait_complete(timeout))
    announced = False
    try:
        async with spinner:  # one spinner at a time; the others wait their turn
            while True:
                await screen.idle.wait()
                async with screen.lock:
                    outcome = await _spin(watch, done, screen, view, keys, announce=not announced)
                    announced = True
                    if outcome == "background":
                        view.say(f"Waiting in the background; a line here says when {watch.server} confirms.", "dim")
                        break
                    if outcome == "retry":
                        settle(watch.request)
                    if outcome != "form":
                        view.say(*report_line(outcome, watch.server, watch.domain))
                        return
        # In the background: no status line, no keys; the outcome is still reported when the screen is free.
        await asyncio.wait([done])
        await screen.idle.wait()
        async with screen.lock:
            view.say(*report_line(_ended(done), watch.server, watch.domain))
    except Exception:
        logger.exception("waiting for the completion of %s failed", watch.request.elicitation_id)
    finally:
        if not done.done():
            done.cancel()


async def _spin(
    watch: Watch, done: asyncio.Future[bool], screen: Screen, view: View, keys: Input | None, *, announce: bool
) -> str:
    """Show the status line until completion ("done"/"timeout"), a choice ("background", "retry", "key") or a form."""
    pressed = asyncio.Event()
    choice: list[str] = []
    console = view.console
    text = Text(f"Waiting for {watch.server} to confirm you finished at {watch.domain}…")
    if keys is not None:
        text.append(" [Enter keep waiting in the background · r retry now · c cancel]", "italic")
    with contextlib.ExitStack() as stack:
        if keys is not None:
            stack.enter_context(keys.raw_mode())
            with contextlib.suppress(EOFError, OSError):  # no keyboard after all (stdin at its end): just wait
                stack.enter_context(keys.attach(functools.partial(_on_key, keys, pressed, choice)))
        if console.is_terminal:
            stack.enter_context(console.status(text, spinner="dots"))
        elif announce:
            console.print(Text("… ") + text)
        helpers = [asyncio.ensure_future(pressed.wait()), asyncio.ensure_future(screen.wanted.wait())]
        waited: list[asyncio.Future[Any]] = [done, *helpers]
        try:
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for helper in helpers:
                helper.cancel()
    if done.done():
        return _ended(done)
    return choice[0] if pressed.is_set() and choice else "form"


def _ended(done: asyncio.Future[bool]) -> str:
    if done.cancelled() or done.exception() is not None:
        return "gone"
    return "done" if done.result() else "timeout"


_CHOICES = {"\r": "background", "\n": "background", "w": "background", "r": "retry", "c": "key", "q": "key"}


def _on_key(keys: Input, pressed: asyncio.Event, choice: list[str]) -> None:
    for press in [*keys.read_keys(), *keys.flush_keys()]:
        data = press.data.lower()
        picked = "key" if data in ("\x1b", "\x03") else _CHOICES.get(data)  # Esc and Ctrl-C cancel too
        if picked is not None and not pressed.is_set():
            choice.append(picked)
            pressed.set()


def settle(request: UrlRequest) -> None:
    """ "Retry now": count the page as finished here, so a call waiting for its notice (-32042) goes on.

    The client's completion tracker is what ``request.completion`` waits on; telling it the id
    completed wakes that wait exactly as the server's notice would.
    """
    owner = getattr(request.completion, "func", None)
    tracker = getattr(owner, "__self__", None)
    completed = getattr(tracker, "completed", None)
    if callable(completed):
        completed(request.elicitation_id)
