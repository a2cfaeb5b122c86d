"""The plain-lines reader holds Ctrl-C for the whole question, not only while a line is read."""

from __future__ import annotations

import asyncio
import io
import os
import signal

import pytest
from prompt_toolkit.completion import DummyCompleter
from rich.console import Console

from elicitkit.client.handlers.terminal.dialogue import Stop
from elicitkit.client.handlers.terminal.reader import LineReader


def test_ctrl_c_between_two_prompts_dismisses_the_question_not_the_program() -> None:
    """SIGINT that lands while the question is drawn (before its prompt reads) is the question's."""
    read, write = os.pipe()
    stream = os.fdopen(read, "r")
    reader = LineReader(stream, Console(file=io.StringIO()))
    before = signal.getsignal(signal.SIGINT)

    async def question() -> str:
        with reader.holding():
            os.kill(os.getpid(), signal.SIGINT)  # the person presses Ctrl-C as the prompt appears
            await asyncio.sleep(0.05)  # the signal is delivered: the program goes on
            return await reader.read([("", "Name ")], DummyCompleter())

    try:
        with pytest.raises(Stop) as stopped:
            asyncio.run(question())
    finally:
        os.close(write)
        stream.close()
    assert (stopped.value.action, stopped.value.how) == ("cancel", "Ctrl-C")
    assert signal.getsignal(signal.SIGINT) is before  # given back when the question ends
