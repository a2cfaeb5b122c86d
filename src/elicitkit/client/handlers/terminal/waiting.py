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

    ``spinner`` lets one wait show at a time; ``keys`` (None: do not listen) lets a key
    press stop the wait.
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
                    if outcome != "form":
                        view.say(*report_line(outcome, watch.server, watch.domain))
                        return
    except Exception:
        logger.exception("waiting for the completion of %s failed", watch.request.elicitation_id)
    finally:
        if not done.done():
            done.cancel()


async def _spin(
    watch: Watch, done: asyncio.Future[bool], screen: Screen, view: View, keys: Input | None, *, announce: bool
) -> str:
    """Show the spinner until completion ("done"/"timeout"), a key ("key") or a form ("form")."""
    pressed = asyncio.Event()
    console = view.console
    text = Text(f"Waiting for {watch.server} to confirm you finished at {watch.domain}…")
    if keys is not None:
        text.append(" (any key stops waiting)", "dim")
    with contextlib.ExitStack() as stack:
        if keys is not None:
            stack.enter_context(keys.raw_mode())
            with contextlib.suppress(EOFError, OSError):  # no keyboard after all (stdin at its end): just wait
                stack.enter_context(keys.attach(functools.partial(_on_key, keys, pressed)))
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
        if done.cancelled() or done.exception() is not None:
            return "gone"
        return "done" if done.result() else "timeout"
    return "key" if pressed.is_set() else "form"


def _on_key(keys: Input, pressed: asyncio.Event) -> None:
    if keys.read_keys() or keys.flush_keys():  # any key, Esc and Ctrl-C included
        pressed.set()
