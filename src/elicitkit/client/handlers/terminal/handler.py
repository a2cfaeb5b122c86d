"""A server's questions answered in the terminal, with a review before anything is sent.

:class:`TerminalHandler` is an ``elicitation_callback``: it draws the question with rich
(who asks, the message, each field with its rules), reads the answers with prompt_toolkit's
async prompt, so the client's event loop keeps serving messages while a person types, and
judges every answer with the shared :mod:`~elicitkit.client.handlers.fields` code, so it
accepts exactly what the server will.

URL questions show the full address with its domain set apart and the warnings of
:func:`~elicitkit.client.handlers.urls.assess_url`, and open the browser only after a yes.
The ``accept`` goes back at once (the server waits for the person, not for the client);
waiting for the server's completion notice is a background task with a spinner that gives
way to any form that comes in meanwhile.

Outside a terminal (piped stdin or stdout) it falls back to plain lines: no colours, no
cursor movement, no spinner animation, so a transcript reads like the session did.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import signal
import sys
import threading
import unicodedata
import webbrowser
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TextIO, TypeVar

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
from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from elicitkit.client.handlers.fields import FieldError, FieldKind, FormField, answer_content, check_form, form_fields
from elicitkit.client.handlers.urls import UrlAssessment, assess_url
from elicitkit.elicitation.errors import InvalidAnswer
from elicitkit.elicitation.requests import FormRequest, Origin, UrlRequest
from elicitkit.elicitation.results import ElicitationResult

__all__ = ["OpenUrl", "TerminalHandler"]

logger = logging.getLogger("elicitkit.client.handlers.terminal")

T = TypeVar("T")

#: Opens a URL for the person: ``False`` means it could not; may be a coroutine function.
OpenUrl = Callable[[str], Any]

_YES = frozenset({"y", "yes", "o", "open"})
_NO = frozenset({"n", "no", "d", "decline", ":decline"})
_CANCEL = frozenset({"c", "cancel", ":cancel"})
_SEND = frozenset({"", "s", "send", ":send"})
# Characters a server could use to redraw or reorder what the person reads.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_ARROW = " \u203a "  # the prompt's arrow
_STYLE = Style.from_dict({"label": "bold", "hint": "#888888", "arrow": "#5f87ff bold"})

HELP = (
    "Enter alone keeps the answer in [brackets] · :back previous question · :clear no answer · "
    ":decline say no · :cancel or Esc or Ctrl-C dismiss"
)


class _Stop(Exception):
    """The person left the question: declined it or dismissed it (``how`` says by what)."""

    def __init__(self, action: Literal["decline", "cancel"], how: str) -> None:
        super().__init__(action, how)
        self.action = action
        self.how = how


def _clean(text: str, *, lines: bool = True) -> str:
    """Server text made safe to print: no escape sequences, no bidi tricks."""
    out: list[str] = []
    for ch in text:
        if ch == "\t" or (ch == "\n" and lines):
            out.append(ch)
        elif ch in _BIDI or unicodedata.category(ch) == "Cc":
            out.append("\ufffd")
        else:
            out.append(ch)
    return "".join(out)


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):
        return False


def _in_daemon_thread(func: Callable[[], T]) -> asyncio.Future[T]:
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


def _who(origin: Origin | None) -> str:
    return _clean((origin or Origin()).display_name, lines=False)


# ------------------------------------------------------------------------------ input


class _Reader(Protocol):
    """Where answers are typed: a prompt_toolkit prompt, or plain lines."""

    @property
    def keys(self) -> Input | None: ...

    def holding(self) -> contextlib.AbstractContextManager[Any]: ...

    async def read(self, message: FormattedText, completer: Completer) -> str: ...


class _PromptReader:
    """prompt_toolkit on a terminal: line editing, Tab completion, Esc and Ctrl-C as keys."""

    def __init__(self, keys: Input, output: Output) -> None:
        self._keys = keys
        bindings = KeyBindings()

        @bindings.add("escape")
        def _escape(event: KeyPressEvent) -> None:
            event.app.exit(exception=_Stop("cancel", "Esc"))

        @bindings.add("c-c")
        def _interrupt(event: KeyPressEvent) -> None:
            event.app.exit(exception=_Stop("cancel", "Ctrl-C"))

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

    async def read(self, message: FormattedText, completer: Completer) -> str:
        try:
            return await self.session.prompt_async(message, completer=completer)
        except KeyboardInterrupt:
            raise _Stop("cancel", "Ctrl-C") from None
        except EOFError:
            raise _Stop("cancel", "Ctrl-D") from None


class _LineReader:
    """Plain lines (a pipe, a file, a screen reader): the prompt printed, the answer echoed."""

    def __init__(self, stream: TextIO, console: Console) -> None:
        self.stream = stream
        self.console = console
        self.echo = not _isatty(stream)  # a terminal echoes by itself
        self._pending: asyncio.Future[str] | None = None

    @property
    def keys(self) -> Input | None:
        return None

    def holding(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    async def read(self, message: FormattedText, completer: Completer) -> str:
        self.console.print(Text("".join(fragment[1] for fragment in message)), end="")
        line = await self._readline()
        if line == "":
            self.console.print()
            raise _Stop("cancel", "end of input")
        line = line.rstrip("\r\n")
        if self.echo:
            self.console.print(Text(_clean(line, lines=False)))
        if "\x1b" in line:
            raise _Stop("cancel", "Esc")
        return line

    async def _readline(self) -> str:
        # One reading thread at a time: an abandoned read still owns the next line.
        if self._pending is None or self._pending.done():
            self._pending = _in_daemon_thread(self.stream.readline)
        pending = self._pending
        if threading.current_thread() is not threading.main_thread():
            return await asyncio.shield(pending)
        previous = signal.getsignal(signal.SIGINT)
        if previous is None:  # a handler installed from C: leave it alone
            return await asyncio.shield(pending)
        loop = asyncio.get_running_loop()
        interrupted = asyncio.Event()

        def on_interrupt(signum: int, frame: object) -> None:
            loop.call_soon_threadsafe(interrupted.set)

        signal.signal(signal.SIGINT, on_interrupt)  # Ctrl-C dismisses the question, not the program
        stop = asyncio.ensure_future(interrupted.wait())
        waited: list[asyncio.Future[Any]] = [pending, stop]
        try:
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            signal.signal(signal.SIGINT, previous)
        if interrupted.is_set() and not pending.done():
            self.console.print()
            raise _Stop("cancel", "Ctrl-C")
        return pending.result()


class _OptionCompleter(Completer):
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


# ------------------------------------------------------------------------------ the screen


class _Screen:
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
class _Watch:
    """One URL question whose completion notice is awaited in the background."""

    request: UrlRequest
    server: str
    domain: str


# ------------------------------------------------------------------------------ the handler


class TerminalHandler:
    """Answers elicitations in the terminal; use as ``Client(..., elicitation_callback=TerminalHandler())``.

    ``input`` / ``output``: where answers are read and prompts drawn: text streams (default
    stdin/stdout) or prompt_toolkit ``Input`` / ``Output`` objects (tests drive it through a
    pipe input). On a terminal prompt_toolkit reads the keys; otherwise, or with
    ``plain=True``, plain lines are read and echoed, so a transcript stays readable.
    ``console``: the rich console everything is drawn on (default: one on ``output``).
    ``open_url``: opens a consented URL (default :func:`webbrowser.open` in a thread, which
    honours ``BROWSER``); it may return ``False`` for "could not", or be a coroutine function.
    ``completion_timeout``: how long the background spinner waits for a completion notice.
    ``listen_keys``: whether a key press stops that spinner.

    Use ``async with TerminalHandler() as handler`` (or call :meth:`aclose`) to stop the
    background waits when done, and :meth:`wait_idle` to let them finish first.
    """

    def __init__(
        self,
        *,
        input: Input | TextIO | None = None,
        output: Output | TextIO | None = None,
        console: Console | None = None,
        open_url: OpenUrl | None = None,
        completion_timeout: float | None = 900.0,
        open_timeout: float = 10.0,
        plain: bool | None = None,
        listen_keys: bool = True,
    ) -> None:
        self._input = input
        self._output = output
        stream = output if output is not None and not isinstance(output, Output) else None
        self.console = console if console is not None else Console(file=stream, highlight=False)
        self.open_url: OpenUrl = open_url if open_url is not None else webbrowser.open
        self.completion_timeout = completion_timeout
        self.open_timeout = open_timeout
        self.plain = plain
        self.listen_keys = listen_keys
        self._reader: _Reader | None = None
        self._screen: _Screen | None = None
        self._spinner: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watches: set[asyncio.Task[None]] = set()

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> TerminalHandler:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def waiting(self) -> int:
        """How many URL questions are still waited on in the background."""
        return sum(1 for task in self._watches if not task.done())

    async def wait_idle(self) -> None:
        """Until every background wait has ended (completed, stopped by a key, or timed out)."""
        while self._watches:
            await asyncio.wait(set(self._watches))

    async def aclose(self) -> None:
        """Stop the background waits (the terminal is given back as it was)."""
        tasks = set(self._watches)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    # -- the callback ---------------------------------------------------------------------

    async def __call__(self, request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        """Ask the person; returns accept (with the checked content), decline or cancel."""
        screen = self._get_screen()
        reader = self._get_reader()
        async with screen.form():
            with reader.holding():
                try:
                    if isinstance(request, UrlRequest):
                        return await self._ask_url(reader, request)
                    return await self._ask_form(reader, request)
                except _Stop as stop:
                    return self._stopped(request.origin, stop)
                except asyncio.CancelledError:
                    self.console.print(Text(f"\n(the question from {_who(request.origin)} was withdrawn)", "dim"))
                    raise

    def _get_reader(self) -> _Reader:
        if self._reader is None:
            self._reader = self._make_reader()
        return self._reader

    def _make_reader(self) -> _Reader:
        source, sink = self._input, self._output
        if isinstance(source, Input):
            return _PromptReader(source, sink if isinstance(sink, Output) else create_output(sink))
        stream = source if source is not None else sys.stdin
        out_stream = sink if sink is not None and not isinstance(sink, Output) else sys.stdout
        terminal = _isatty(stream) and (isinstance(sink, Output) or _isatty(out_stream))
        if self.plain or (self.plain is None and not terminal):
            return _LineReader(stream, self.console)
        return _PromptReader(create_input(stream), sink if isinstance(sink, Output) else create_output(out_stream))

    def _get_screen(self) -> _Screen:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError("TerminalHandler runs on asyncio (prompt_toolkit needs it), not on trio") from None
        if self._screen is None or self._loop is not loop:  # asyncio primitives belong to one loop
            self._screen, self._spinner, self._loop = _Screen(), asyncio.Lock(), loop
        return self._screen

    # -- showing --------------------------------------------------------------------------

    def _header(self, origin: Origin | None, message: str, title: str | None = None) -> None:
        who = origin or Origin()
        server = Text()
        server.append("server: ", "dim")
        server.append(_clean(who.display_name, lines=False), "bold")
        if who.title and who.title != who.name:
            server.append(f" ({_clean(who.name, lines=False)})")
        if who.version:
            server.append(f" {_clean(who.version, lines=False)}")
        if who.location:
            server.append(" · runs as: ", "dim")
            server.append(_clean(who.location, lines=False))
        body: list[Text] = [Text(_clean(message))]
        if title:
            body.insert(0, Text(_clean(title, lines=False), "bold"))
        body += [Text(""), server]
        heading = Text.assemble(("Question from ", ""), (_who(origin), "bold"))
        self.console.print()
        self.console.print(Panel(Group(*body), title=heading, title_align="left", border_style="cyan"))

    def _say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style))

    def _indented(self, text: Text) -> None:
        """Under the question, wrapped lines kept in the same column."""
        self.console.print(Padding(text, (0, 0, 0, 3), expand=False))

    def _problem(self, reason: str) -> None:
        self._indented(Text(f"✗ {_clean(reason, lines=False)}", "red"))

    def _show_field(self, field: FormField, index: int, count: int, current: Any) -> None:
        head = Text()
        head.append(f"[{index + 1}/{count}] ", "dim")
        head.append(_clean(field.label, lines=False), "bold")
        if field.required:
            head.append(" (required)", "red")
        self.console.print()
        self.console.print(head)
        if field.description:
            self._indented(Text(_clean(field.description), "italic"))
        rules = [_clean(rule, lines=False) for rule in field.constraints()]
        how = {
            FieldKind.CHOICE: "choose one: its number or name",
            FieldKind.MULTI: "choose any: numbers or names, comma-separated (+N / -N adds / removes)",
            FieldKind.BOOLEAN: "y or n",
        }.get(field.kind)
        if how:
            rules.append(how)
        if rules:
            self._indented(Text(" · ".join(rules), "dim"))
        for number, option in enumerate(field.options, 1):
            if field.kind is FieldKind.MULTI:
                mark = "[x]" if isinstance(current, list) and option.value in current else "[ ]"
            else:
                mark = "(•)" if option.value == current else "( )"
            line = Text(f"   {mark} {number}) ")
            line.append(_clean(option.title, lines=False), "bold" if mark in ("[x]", "(•)") else "")
            self.console.print(line)

    def _prompt(self, field: FormField, current: Any) -> FormattedText:
        parts: list[tuple[str, str]] = [("class:label", _clean(field.label, lines=False))]
        if field.kind is FieldKind.BOOLEAN:
            parts.append(("class:hint", " (y/n)"))
        if current is not None:
            shown = "none" if current == [] else field.display(current)
            parts.append(("class:hint", f" [{_clean(shown, lines=False)}]"))
        elif not field.required:
            parts.append(("class:hint", " [skip]"))
        parts.append(("class:arrow", _ARROW))
        return FormattedText(parts)

    # -- forms ----------------------------------------------------------------------------

    async def _ask_form(self, reader: _Reader, request: FormRequest) -> ElicitationResult[Any]:
        schema = request.requested_schema
        fields = form_fields(schema)
        title = schema.get("title")
        self._header(request.origin, request.message, title if isinstance(title, str) else None)
        self._say(HELP, "dim")
        values: dict[str, Any] = {f.name: f.default if f.has_default else None for f in fields}
        index = 0
        while index < len(fields):
            moved_back = await self._ask_field(reader, fields, index, values)
            index = max(0, index - 1) if moved_back else index + 1
        return await self._review(reader, request, fields, values)

    async def _ask_field(
        self, reader: _Reader, fields: list[FormField], index: int, values: dict[str, Any], *, review: bool = False
    ) -> bool:
        """Ask one field until its answer fits; True when the person went back instead (at review: unchanged)."""
        field = fields[index]
        current = values[field.name]
        self._show_field(field, index, len(fields), current)
        words = [o.title for o in field.options] if field.options else []
        if field.kind is FieldKind.BOOLEAN:
            words = ["yes", "no"]
        completer: Completer = _OptionCompleter(words, field.kind is FieldKind.MULTI) if words else DummyCompleter()
        while True:
            text = await reader.read(self._prompt(field, current), completer)
            command = _command(text)
            if command == "back":
                if index == 0 and not review:
                    self._problem("this is the first question")
                    continue
                return True
            if command == "clear":
                value: Any = [] if field.kind is FieldKind.MULTI else None
            elif command == "help":
                self._say(HELP, "dim")
                continue
            elif command is not None:
                self._problem(f"unknown command :{command} (type ::{command} to answer with the text itself)")
                continue
            elif text.strip() == "":
                value = current
            else:
                try:
                    value = _parse(field, _literal(text), current)
                except FieldError as exc:
                    self._problem(str(exc))
                    continue
            problems = field.problems(value)
            if problems:
                rules = [_clean(rule, lines=False) for rule in field.constraints()]
                self._problem("; ".join(problems) + (f" (wanted: {', '.join(rules)})" if rules else ""))
                continue
            values[field.name] = value
            return False

    def _show_review(self, fields: list[FormField], values: dict[str, Any], problems: dict[str | None, str]) -> None:
        table = Table(title="Your answers", title_justify="left", show_edge=False, pad_edge=False)
        table.add_column("#", justify="right", style="dim")
        table.add_column("question")
        table.add_column("answer", style="bold")
        if problems:
            table.add_column("problem", style="red")
        for number, field in enumerate(fields, 1):
            value = values.get(field.name)
            if value is None:
                answer = Text("(default: " + _clean(field.display(field.default)) + ")" if field.has_default else "—")
                answer.stylize("dim")
            else:
                answer = Text(_clean(field.display(value)))
            row: list[str | Text] = [
                str(number),
                _clean(field.label, lines=False) + (" *" if field.required else ""),
                answer,
            ]
            if problems:
                row.append(Text(_clean(problems.get(field.name, ""))))
            table.add_row(*row)
        self.console.print()
        if fields:
            self.console.print(table)
        else:
            self._say("There is nothing to fill in; send to agree.")
        if None in problems:
            self._problem(problems[None])

    async def _review(
        self, reader: _Reader, request: FormRequest, fields: list[FormField], values: dict[str, Any]
    ) -> ElicitationResult[Any]:
        schema = request.requested_schema
        numbers = "1" if len(fields) == 1 else f"1-{len(fields)}"
        choices = f"{numbers} change an answer · " if fields else ""
        prompt = FormattedText(
            [
                ("class:label", "Send?"),
                ("class:hint", f" [Enter or s send · {choices}d decline · c cancel]"),
                ("class:arrow", _ARROW),
            ]
        )
        show = True
        while True:
            problems = check_form(schema, values)
            if show:
                self._show_review(fields, values, problems)
                show = False
            text = (await reader.read(prompt, DummyCompleter())).strip()
            key = text.lower()
            if key in _SEND:
                if problems:
                    self._problem("some answers do not fit yet; change the marked ones first")
                    show = True
                    continue
                try:
                    content = answer_content(schema, values)
                except InvalidAnswer as exc:
                    self._problem(exc.reason)
                    continue
                self._say(f"✓ Sent to {_who(request.origin)}.", "green")
                return ElicitationResult.accept(content)
            if key in _NO:
                raise _Stop("decline", text)
            if key in _CANCEL:
                raise _Stop("cancel", text)
            field = _pick(fields, text)
            if field is None:
                numbers = f"a number from 1 to {len(fields)} to change an answer, " if fields else ""
                self._problem(f"type {numbers}s to send, d to decline or c to cancel")
                continue
            await self._ask_field(reader, fields, fields.index(field), values, review=True)
            show = True

    def _stopped(self, origin: Origin | None, stop: _Stop) -> ElicitationResult[Any]:
        if stop.action == "decline":
            self._say(f"✗ Declined: {_who(origin)} is told you said no.", "yellow")
            return ElicitationResult.decline()
        self._say(f"✗ Cancelled ({_clean(stop.how, lines=False)}): {_who(origin)} is told you dismissed it.", "yellow")
        return ElicitationResult.cancel()

    # -- URLs -----------------------------------------------------------------------------

    async def _ask_url(self, reader: _Reader, request: UrlRequest) -> ElicitationResult[Any]:
        facts = assess_url(request.url)
        self._header(request.origin, request.message)
        self._show_url(facts)
        prompt = FormattedText(
            [("class:label", "Open it in your browser?"), ("class:hint", " (y/n)"), ("class:arrow", _ARROW)]
        )
        while True:
            text = (await reader.read(prompt, _OptionCompleter(["yes", "no"], False))).strip()
            key = text.lower()
            if key in _YES:
                break
            if key in _NO:
                raise _Stop("decline", text)
            if key in _CANCEL:
                raise _Stop("cancel", text)
            self._problem("answer y to open the page, n to decline, or Esc to dismiss the question")
        opened, why = await self._open(request.url)
        if opened:
            self._say("✓ Opened in your browser.", "green")
        else:
            self._say(f"Could not open a browser ({_clean(why, lines=False)}); open this address yourself:", "yellow")
            self.console.print(Text("   " + _clean(request.url, lines=False)), soft_wrap=True)
        server = _who(request.origin)
        if request.notifies_completion:
            self._watch(_Watch(request, server, _clean(facts.display_host or facts.host, lines=False)))
        else:
            self._say(f"{server} carries on when you are done there.", "dim")
        return ElicitationResult.accept()

    def _show_url(self, facts: UrlAssessment) -> None:
        before, host, after = facts.parts
        line = Text("   ")
        line.append(_clean(before, lines=False), "dim")
        line.append(_clean(host, lines=False), "bold underline")
        line.append(_clean(after, lines=False), "dim")
        self.console.print(Text("This question is answered on a web page:"))
        self.console.print(line, soft_wrap=True)  # one unbroken line: copyable
        domain = Text("   domain: ")
        domain.append(_clean(facts.display_host or facts.host or "(none)", lines=False), "bold")
        if facts.display_host != facts.host:
            domain.append(f" (written {_clean(facts.host, lines=False)})")
        self.console.print(domain)
        for warning in facts.warnings:
            self._indented(Text("⚠ " + _clean(warning, lines=False), "bold yellow"))

    async def _open(self, url: str) -> tuple[bool, str]:
        """Open ``url`` with ``open_url``; (False, why) when it fails. Never waits past open_timeout."""
        opener = self.open_url
        try:
            if inspect.iscoroutinefunction(opener):
                outcome = await asyncio.wait_for(opener(url), self.open_timeout)
            else:
                pending = _in_daemon_thread(functools.partial(opener, url))
                outcome = await asyncio.wait_for(asyncio.shield(pending), self.open_timeout)
        except TimeoutError:
            return True, ""  # still starting: it has the URL, let it be
        except Exception as exc:
            logger.warning("could not open %s: %s", url, exc)
            return False, str(exc) or type(exc).__name__
        return (False, "no browser found") if outcome is False else (True, "")

    # -- waiting for completion -----------------------------------------------------------

    def _watch(self, watch: _Watch) -> None:
        """Start waiting for the completion notice without holding up the accept."""
        task = asyncio.get_running_loop().create_task(self._wait_for(watch), name=f"elicitkit-wait-{watch.server}")
        self._watches.add(task)
        task.add_done_callback(self._watches.discard)

    async def _wait_for(self, watch: _Watch) -> None:
        screen = self._get_screen()
        spinner = self._spinner
        assert spinner is not None
        done = asyncio.ensure_future(watch.request.wait_complete(self.completion_timeout))
        announced = False
        try:
            async with spinner:  # one spinner at a time; the others wait their turn
                while True:
                    await screen.idle.wait()
                    async with screen.lock:
                        outcome = await self._spin(watch, done, announce=not announced)
                        announced = True
                        if outcome != "form":
                            self._report(watch, outcome)
                            return
        except Exception:
            logger.exception("waiting for the completion of %s failed", watch.request.elicitation_id)
        finally:
            if not done.done():
                done.cancel()

    async def _spin(self, watch: _Watch, done: asyncio.Future[bool], *, announce: bool) -> str:
        """Show the spinner until completion ("done"/"timeout"), a key ("key") or a form ("form")."""
        screen = self._get_screen()
        pressed = asyncio.Event()
        keys = self._get_reader().keys if self.listen_keys else None
        text = Text(f"Waiting for {watch.server} to confirm you finished at {watch.domain}…")
        if keys is not None:
            text.append(" (any key stops waiting)", "dim")
        with contextlib.ExitStack() as stack:
            if keys is not None:
                stack.enter_context(keys.raw_mode())
                with contextlib.suppress(EOFError, OSError):  # no keyboard after all (stdin at its end): just wait
                    stack.enter_context(keys.attach(functools.partial(_on_key, keys, pressed)))
            if self.console.is_terminal:
                stack.enter_context(self.console.status(text, spinner="dots"))
            elif announce:
                self.console.print(Text("… ") + text)
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

    def _report(self, watch: _Watch, outcome: str) -> None:
        if outcome == "done":
            self._say(f"✓ completed: {watch.server} confirms you finished at {watch.domain}.", "green")
        elif outcome == "key":
            self._say(f"Stopped waiting for {watch.server}; it carries on when you finish at {watch.domain}.", "dim")
        elif outcome == "timeout":
            self._say(f"No word from {watch.server} about {watch.domain} yet; stopped waiting.", "yellow")
        else:
            self._say(f"Stopped waiting for {watch.server}: the connection is gone.", "yellow")


def _on_key(keys: Input, pressed: asyncio.Event) -> None:
    if keys.read_keys() or keys.flush_keys():  # any key, Esc and Ctrl-C included
        pressed.set()


def _command(text: str) -> str | None:
    """``:word`` -> the command name ("back", "decline"...); a plain answer -> None."""
    stripped = text.strip()
    if not stripped.startswith(":") or stripped.startswith("::"):
        return None
    word = stripped[1:].lower()
    if not word.isalpha():
        return None  # ":)" and the like are answers
    aliases = {"b": "back", "back": "back", "clear": "clear", "help": "help", "decline": "decline", "cancel": "cancel"}
    name = aliases.get(word, word)
    if name == "decline":
        raise _Stop("decline", ":decline")
    if name == "cancel":
        raise _Stop("cancel", ":cancel")
    return name


def _literal(text: str) -> str:
    """``::x`` is the answer ``:x`` (how to type something that looks like a command)."""
    stripped = text.strip()
    return stripped[1:] if stripped.startswith("::") else text


def _parse(field: FormField, text: str, current: Any) -> Any:
    """Typed text -> value; a multi-select also takes ``+N`` / ``-N`` against the current choice."""
    try:
        return field.parse(text)
    except FieldError:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if field.kind is not FieldKind.MULTI or not parts or not all(p[0] in "+-" for p in parts):
            raise
    chosen = list(current) if isinstance(current, list) else []
    for part in parts:
        picked = field.parse(part[1:])
        for value in picked or []:
            if part[0] == "+" and value not in chosen:
                chosen.append(value)
            elif part[0] == "-" and value in chosen:
                chosen.remove(value)
    return chosen


def _pick(fields: list[FormField], text: str) -> FormField | None:
    """The field a review answer names: its number, name or title."""
    if text.isdigit() and 1 <= int(text) <= len(fields):
        return fields[int(text) - 1]
    for field in fields:
        if text.casefold() in (field.name.casefold(), field.label.casefold()):
            return field
    return None
