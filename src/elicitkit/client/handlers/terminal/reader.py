"""Where answers are typed: prompt_toolkit on a terminal, or plain lines from a pipe or a file.

Both readers take a prompt and return one line, and both turn the ways of walking away
(Esc, Ctrl-C, Ctrl-D, the end of input) into :class:`~.dialogue.Stop`, so the form code
never sees a keyboard. Reading never blocks the event loop: prompt_toolkit is async, and
plain lines are read in a daemon thread that cannot hold up the program's exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TextIO, TypeVar

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, DummyCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import DummyHistory
from prompt_toolkit.input import Input, create_input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output, create_output
from prompt_toolkit.shortcuts import CompleteStyle
from prompt_toolkit.styles import Style
from rich.console import Console
from rich.text import Text

from elicitkit.client.handlers.terminal.dialogue import MASK, Fragments, Stop, clean

__all__ = [
    "LineReader",
    "OptionCompleter",
    "PromptReader",
    "Reader",
    "completer",
    "in_daemon_thread",
    "isatty",
    "make_reader",
]

T = TypeVar("T")

# No fixed colours: a grey picked for a dark terminal is unreadable on a light one. Hints are
# the terminal's own foreground in italics, so they keep whatever contrast the person chose.
_STYLE = Style.from_dict({"label": "bold", "hint": "italic", "arrow": "bold"})


def isatty(stream: object) -> bool:
    """Whether ``stream`` is a terminal; anything without a working ``isatty`` is not."""
    check = getattr(stream, "isatty", None)
    try:
        return bool(check()) if callable(check) else False
    except (ValueError, OSError):
        return False


def in_daemon_thread(func: Callable[[], T]) -> asyncio.Future[T]:
    """Run a blocking call where it can be abandoned: a daemon thread never holds up exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(outcome)  # type: ignore[arg-type]

    def run() -> None:
        try:
            outcome = func()
        except BaseException as exc:  # handed to the awaiting task
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
                loop.call_soon_threadsafe(settle, None, exc)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, outcome, None)

    threading.Thread(target=run, name="elicitkit-terminal", daemon=True).start()
    return future


class Reader(Protocol):
    """Where answers are typed: a prompt_toolkit prompt, or plain lines."""

    @property
    def keys(self) -> Input | None: ...

    def holding(self) -> contextlib.AbstractContextManager[Any]: ...

    async def read(self, message: Fragments, completer: Completer, *, secret: bool = False) -> str: ...


def wrap_fragments(message: Fragments, width: int) -> Fragments:
    """``message`` with line breaks at spaces so that no word is split at the terminal's edge
    (prompt_toolkit wraps a long prompt at whatever column it reaches: ":decl" / "ine").

    A word longer than a line stays whole on a line of its own and is wrapped by the terminal.
    """
    if width <= 0 or sum(len(text) for _, text in message) < width:
        return message
    out: Fragments = []
    column = 0
    for style, text in message:
        pieces = text.split(" ")
        chunk = ""
        for n, piece in enumerate(pieces):
            word = piece if n == 0 else " " + piece
            if column + len(word) >= width and column > 0 and n > 0:
                out.append((style, chunk))
                out.append((style, "\n"))
                chunk, column = piece, len(piece)
                continue
            chunk += word
            column += len(word)
        out.append((style, chunk))
    return out


class PromptReader:
    """prompt_toolkit on a terminal: line editing, Tab completion, Esc and Ctrl-C as keys."""

    def __init__(self, keys: Input, output: Output) -> None:
        self._keys = keys
        bindings = KeyBindings()

        @bindings.add("escape")
        def _escape(event: KeyPressEvent) -> None:
            event.app.exit(exception=Stop("cancel", "Esc"))

        @bindings.add("c-c")
        def _interrupt(event: KeyPressEvent) -> None:
            event.app.exit(exception=Stop("cancel", "Ctrl-C"))

        self.session: PromptSession[str] = PromptSession(
            input=keys,
            output=output,
            key_bindings=bindings,
            history=DummyHistory(),  # answers are not recalled into other questions
            complete_style=CompleteStyle.READLINE_LIKE,
            complete_while_typing=False,
            style=_STYLE,
        )
        # A lone Esc is told apart from an escape sequence by a pause; keep it short.
        self.session.app.ttimeoutlen = 0.1
        self.session.app.timeoutlen = 0.3

    @property
    def keys(self) -> Input | None:
        return self._keys

    def holding(self) -> contextlib.AbstractContextManager[Any]:
        # Raw mode for the whole question: Ctrl-C between two prompts is a key, not SIGINT.
        return self._keys.raw_mode()

    async def read(self, message: Fragments, completer: Completer, *, secret: bool = False) -> str:
        width = self.session.app.output.get_size().columns
        shown = FormattedText(wrap_fragments(message, width))
        try:
            return await self.session.prompt_async(shown, completer=completer, is_password=secret)
        except KeyboardInterrupt:
            raise Stop("cancel", "Ctrl-C") from None
        except EOFError:
            raise Stop("cancel", "Ctrl-D") from None


class LineReader:
    """Plain lines (a pipe, a file, a screen reader): the prompt printed, the answer echoed."""

    def __init__(self, stream: TextIO, console: Console) -> None:
        self.stream = stream
        self.console = console
        self.echo = not isatty(stream)  # a terminal echoes by itself
        self._pending: asyncio.Future[str] | None = None
        self._interrupted: asyncio.Event | None = None  # set by Ctrl-C while a question is held

    @property
    def keys(self) -> Input | None:
        return None

    def holding(self) -> contextlib.AbstractContextManager[Any]:
        # Like the raw mode of PromptReader: for the whole question, from before its first
        # prompt is drawn, Ctrl-C (SIGINT on a cooked terminal) dismisses it, not the program.
        return self._ctrl_c_dismisses()

    @contextlib.contextmanager
    def _ctrl_c_dismisses(self) -> Iterator[None]:
        if self._interrupted is not None or threading.current_thread() is not threading.main_thread():
            yield  # already held, or a thread that cannot take signals
            return
        previous = signal.getsignal(signal.SIGINT)
        if previous is None:  # a handler installed from C: leave it alone
            yield
            return
        loop = asyncio.get_running_loop()
        interrupted = asyncio.Event()

        def on_interrupt(signum: int, frame: object) -> None:
            loop.call_soon_threadsafe(interrupted.set)

        signal.signal(signal.SIGINT, on_interrupt)
        self._interrupted = interrupted
        try:
            yield
        finally:
            self._interrupted = None
            signal.signal(signal.SIGINT, previous)

    async def read(self, message: Fragments, completer: Completer, *, secret: bool = False) -> str:
        with self._ctrl_c_dismisses():  # a no-op inside holding(): the question holds it already
            self.console.print(Text("".join(fragment[1] for fragment in message)), end="")
            with _no_echo(self.stream) if secret and not self.echo else contextlib.nullcontext():
                line = await self._readline()
        if secret and not self.echo:
            self.console.print()  # the Enter that was not echoed
        if line == "":
            self.console.print()
            raise Stop("cancel", "end of input")
        line = line.rstrip("\r\n")
        if self.echo:
            self.console.print(Text(MASK if secret and line else clean(line, lines=False)))
        if "\x1b" in line:
            raise Stop("cancel", "Esc")
        return line

    async def _readline(self) -> str:
        interrupted = self._interrupted
        if interrupted is not None and interrupted.is_set():  # Ctrl-C came between two prompts
            self.console.print()
            raise Stop("cancel", "Ctrl-C")
        # One reading thread at a time: an abandoned read still owns the next line.
        if self._pending is None or self._pending.done():
            self._pending = in_daemon_thread(self.stream.readline)
        pending = self._pending
        if interrupted is None:
            return await asyncio.shield(pending)
        stop = asyncio.ensure_future(interrupted.wait())
        waited: list[asyncio.Future[Any]] = [pending, stop]
        try:
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if interrupted.is_set() and not pending.done():
            self.console.print()
            raise Stop("cancel", "Ctrl-C")
        return pending.result()


@contextlib.contextmanager
def _no_echo(stream: TextIO) -> Iterator[None]:
    """A terminal that does not show what is typed (a secret on a plain-lines terminal)."""
    try:
        import termios

        fd = stream.fileno()
        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSADRAIN, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class OptionCompleter(Completer):
    """Tab completes option titles (after the last comma for a multi-select)."""

    def __init__(self, words: Iterable[str], multi: bool) -> None:
        self.words = list(words)
        self.multi = multi

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        part = text.rsplit(",", 1)[-1] if self.multi else text
        stripped = part.lstrip().lstrip("+-")
        for word in self.words:
            if word.casefold().startswith(stripped.casefold()):
                yield Completion(word, start_position=-len(stripped))


def completer(words: list[str], multi: bool = False) -> Completer:
    """Tab completion over ``words``; none at all when there are none."""
    return OptionCompleter(words, multi) if words else DummyCompleter()


def make_reader(
    source: Input | TextIO | None, sink: Output | TextIO | None, console: Console, plain: bool | None
) -> Reader:
    """The reader for these streams: prompt_toolkit on a terminal (or a given ``Input``), else plain lines."""
    if isinstance(source, Input):
        return PromptReader(source, sink if isinstance(sink, Output) else create_output(sink))
    stream = source if source is not None else sys.stdin
    out_stream = sink if sink is not None and not isinstance(sink, Output) else sys.stdout
    terminal = isatty(stream) and (isinstance(sink, Output) or isatty(out_stream))
    if plain or (plain is None and not terminal):
        return LineReader(stream, console)
    return PromptReader(create_input(stream), sink if isinstance(sink, Output) else create_output(out_stream))
