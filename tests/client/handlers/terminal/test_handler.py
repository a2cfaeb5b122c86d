"""TerminalHandler in-process: plain-line mode, prompt_toolkit on a pipe, and the background wait."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Iterator
from typing import Any

import pytest
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from elicitkit.client.handlers.terminal import TerminalHandler
from elicitkit.elicitation.requests import FormRequest, Origin, UrlRequest
from elicitkit.elicitation.results import AcceptedElicitation, CancelledElicitation, DeclinedElicitation

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(10)]

ORIGIN = Origin(name="shop", version="1.2", title="The Shop", location="python shop.py")
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "Email"},
        "colours": {
            "type": "array",
            "items": {"anyOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
            "title": "Colours",
        },
        "count": {"type": "integer", "minimum": 1, "default": 2},
    },
    "required": ["email"],
}
FORM = FormRequest("Your details, please.", SCHEMA, ORIGIN)


class Screen(io.StringIO):
    """Captured output that can be awaited: no polling for text to appear."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = asyncio.Event()

    def write(self, text: str) -> int:
        self.changed.set()
        return super().write(text)

    async def shows(self, text: str) -> None:
        while text not in self.getvalue():
            self.changed.clear()
            await self.changed.wait()


def plain(answers: str) -> tuple[TerminalHandler, Screen]:
    out = Screen()
    return TerminalHandler(input=io.StringIO(answers), output=out), out


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as keys:
        yield keys


def on_pipe(keys: PipeInput, **options: Any) -> tuple[TerminalHandler, Screen]:
    screen = Screen()
    console = Console(file=screen, width=120)
    return TerminalHandler(input=keys, output=DummyOutput(), console=console, **options), screen


def url_request(done: asyncio.Event | None, url: str = "https://pay.example.com/x") -> UrlRequest:
    async def completion(timeout: float | None) -> bool:
        assert done is not None
        await asyncio.wait_for(done.wait(), timeout)
        return True

    return UrlRequest("Pay here.", url, "pay-1", ORIGIN, completion if done is not None else None)


# ------------------------------------------------------------------------------ plain lines


async def test_plain_lines_accept_with_defaults_filled() -> None:
    handler, out = plain("nope\nada@example.com\nred, 2\n\n\ns\n")
    result = await handler(FORM)
    assert isinstance(result, AcceptedElicitation)
    assert result.content == {"email": "ada@example.com", "colours": ["r", "g"], "count": 2}
    screen = out.getvalue()
    assert "\x1b" not in screen  # not a terminal: no colours, no cursor movement
    assert "✗ Not an email address: write it like name@example.com." in screen
    assert "Send? [s send" in screen  # Enter alone did not send: the lone Enter at review asked again
    assert "nothing is sent until you type s" in screen
    assert "Email \u203a ada@example.com\n" in screen  # the answer echoed: the transcript reads as typed
    assert "The Shop, shop 1.2" in screen and "python shop.py" in screen


async def test_plain_lines_end_of_input_cancels() -> None:
    handler, out = plain("ada@example.com\n")
    assert isinstance(await handler(FORM), CancelledElicitation)
    assert "Cancelled (end of input)" in out.getvalue()


async def test_plain_lines_decline_and_literal_colon() -> None:
    handler, _ = plain(":decline\n")
    assert isinstance(await handler(FORM), DeclinedElicitation)
    schema = {"type": "object", "properties": {"note": {"type": "string"}}}
    handler, out = plain(":what\n::cancel\ns\n")
    result = await handler(FormRequest("A note?", schema))
    assert result.content == {"note": ":cancel"}  # "::" types a leading colon
    assert "unknown command :what" in out.getvalue()


async def test_clear_leaves_an_optional_field_unset() -> None:
    schema = {"type": "object", "properties": {"nick": {"type": "string", "default": "bo"}, "age": {"type": "integer"}}}
    handler, _ = plain(":clear\n5\n2\n:clear\ns\n")  # clear nick, age 5, then at review clear age
    result = await handler(FormRequest("Who?", schema))
    assert result.content == {"nick": "bo"}  # unset: the default fills it, as the server will


async def test_server_text_cannot_drive_the_terminal() -> None:
    evil = FormRequest(
        "Hi\x1b[2J\x1b]0;owned\x07 there \u202etxt.exe",
        {"type": "object", "properties": {"x": {"type": "string", "title": "X\x1b[31m", "description": "d\x07"}}},
        Origin(name="srv\x1b[1A"),
    )
    handler, out = plain("\ns\n")
    await handler(evil)
    screen = out.getvalue()
    assert "\x1b" not in screen and "\x07" not in screen and "\u202e" not in screen
    assert "Hi\ufffd[2J\ufffd]0;owned\ufffd there \ufffdtxt.exe" in screen


async def test_empty_form_is_a_plain_confirmation() -> None:
    handler, out = plain("s\n")
    result = await handler(FormRequest("Go ahead?", {"type": "object", "properties": {}}))
    assert isinstance(result, AcceptedElicitation) and result.content == {}
    assert "nothing to fill in" in out.getvalue()


# ------------------------------------------------------------------------------ prompt_toolkit on a pipe


async def test_prompt_keys_escape_and_ctrl_c_cancel(pipe: PipeInput) -> None:
    handler, screen = on_pipe(pipe)
    pipe.send_text("ada@example.com\r")
    pipe.send_text("\x03")
    assert isinstance(await handler(FORM), CancelledElicitation)
    assert "Cancelled (Ctrl-C)" in screen.getvalue()
    pipe.send_text("\x1b")
    assert isinstance(await handler(FORM), CancelledElicitation)
    assert "Cancelled (Esc)" in screen.getvalue()


async def test_prompt_keys_accept(pipe: PipeInput) -> None:
    handler, _ = on_pipe(pipe)
    pipe.send_text("bad\rada@example.com\rGreen\r7\r\rs\r")
    result = await handler(FORM)
    assert result.content == {"email": "ada@example.com", "colours": ["g"], "count": 7}


async def test_withdrawn_question_gives_the_terminal_back(pipe: PipeInput) -> None:
    handler, screen = on_pipe(pipe)
    asking = asyncio.ensure_future(handler(FORM))
    await asyncio.wait_for(screen.shows("Email"), 5)
    asking.cancel()  # what the client does when the server cancels the request
    with pytest.raises(asyncio.CancelledError):
        await asking
    assert "(the question from The Shop was withdrawn)" in screen.getvalue()
    pipe.send_text(":decline\r")  # the next question is asked normally
    assert isinstance(await handler(FORM), DeclinedElicitation)


# ------------------------------------------------------------------------------ URLs and the background wait


async def test_url_accept_goes_back_before_completion() -> None:
    done = asyncio.Event()
    opened: list[str] = []
    handler, out = plain("y\n")
    handler.open_url = opened.append
    result = await handler(url_request(done))
    assert isinstance(result, AcceptedElicitation) and result.content is None
    assert opened == ["https://pay.example.com/x"]
    assert handler.waiting == 1  # the completion is waited for in the background, not before answering
    await asyncio.wait_for(out.shows("Waiting for"), 5)
    assert "… Waiting for The Shop to confirm you finished at pay.example.com…" in out.getvalue()
    assert "completed" not in out.getvalue()
    done.set()
    await asyncio.wait_for(handler.wait_idle(), 5)
    assert "✓ completed: The Shop confirms you finished at pay.example.com." in out.getvalue()
    assert handler.waiting == 0


async def test_url_key_press_stops_the_wait(pipe: PipeInput) -> None:
    done = asyncio.Event()
    handler, screen = on_pipe(pipe, open_url=lambda url: True)
    pipe.send_text("y\r")
    assert isinstance(await handler(url_request(done)), AcceptedElicitation)
    assert handler.waiting == 1
    pipe.send_text("x")  # not one of the status line's keys: nothing happens
    await asyncio.sleep(0.2)
    assert handler.waiting == 1
    pipe.send_text("c")
    await asyncio.wait_for(handler.wait_idle(), 5)
    assert "Stopped waiting for The Shop; it carries on when you finish at pay.example.com." in screen.getvalue()


async def test_url_without_completion_notice_and_failing_browser() -> None:
    handler, out = plain("yes\n")
    handler.open_url = lambda url: False
    result = await handler(url_request(None, "http://127.0.0.1:8000/cb"))
    assert isinstance(result, AcceptedElicitation)
    assert handler.waiting == 0
    screen = out.getvalue()
    assert "Could not open a browser (no browser found); open this address yourself:" in screen
    assert "   http://127.0.0.1:8000/cb" in screen
    assert "⚠" not in screen  # plain http to loopback is fine
    assert "The Shop carries on when you are done there." in screen


async def test_url_async_opener_error_still_accepts() -> None:
    async def broken(url: str) -> bool:
        raise OSError("display not found")

    handler, out = plain("y\n")
    handler.open_url = broken
    assert isinstance(await handler(url_request(None)), AcceptedElicitation)
    assert "Could not open a browser (display not found)" in out.getvalue()


async def test_aclose_stops_background_waits() -> None:
    handler, _ = plain("y\n")
    handler.open_url = lambda url: True
    await handler(url_request(asyncio.Event()))  # never completes
    assert handler.waiting == 1
    await handler.aclose()
    assert handler.waiting == 0


async def test_a_form_takes_the_screen_from_the_spinner_and_completion_is_reported_after_it() -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd) as answers, os.fdopen(write_fd, "w") as typing:
        out = Screen()
        handler = TerminalHandler(input=answers, output=out, open_url=lambda url: True)
        done = asyncio.Event()
        typing.write("y\n")
        typing.flush()
        assert isinstance(await handler(url_request(done)), AcceptedElicitation)
        form = asyncio.ensure_future(handler(FORM))
        await asyncio.wait_for(out.shows("Your details, please."), 5)
        done.set()  # the notice arrives while the person is busy with the form
        await asyncio.sleep(0.05)
        assert "completed" not in out.getvalue()  # not printed over the form
        typing.write("ada@example.com\n\n\ns\n")
        typing.flush()
        assert (await asyncio.wait_for(form, 5)).content == {"email": "ada@example.com", "count": 2}
        await asyncio.wait_for(handler.wait_idle(), 5)
        screen = out.getvalue()
        assert screen.index("Sent to The Shop") < screen.index("✓ completed: The Shop")
