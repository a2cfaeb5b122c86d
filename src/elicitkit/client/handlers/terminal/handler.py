"""A server's questions answered in the terminal, with a review before anything is sent.

:class:`TerminalHandler` is an ``elicitation_callback``: it draws the question with rich
(who asks, the message, each field with its rules), reads the answers with prompt_toolkit's
async prompt, so the client's event loop keeps serving messages while a person types, and
judges every answer with the shared :mod:`~elicitkit.elicitation.fields` code, so it
accepts exactly what the server will.

URL questions show the full address with its domain set apart and the warnings of
:func:`~elicitkit.elicitation.urls.assess_url` (and, for a URL that came with a -32042 error,
the server's reason), and open the browser only after a yes.
The ``accept`` goes back at once (the server waits for the person, not for the client);
waiting for the server's completion notice is a background task with a spinner that gives
way to any form that comes in meanwhile.

Outside a terminal (piped stdin or stdout) it falls back to plain lines: no colours, no
cursor movement, no spinner animation, so a transcript reads like the session did.

This module only runs the conversation: what is said and how a typed line is read are in
:mod:`.dialogue`, the drawing in :mod:`.view`, the keyboard in :mod:`.reader`, the
background waits in :mod:`.waiting`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import webbrowser
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from elicitkit.client.handlers.terminal.dialogue import (
    ARROW,
    CONSENT_AGAIN,
    CONSENT_PROMPT,
    HELP,
    ONE_ANSWER_HOW,
    YES_NO_HOW,
    Back,
    Change,
    Problem,
    ShowHelp,
    Stop,
    clean,
    command,
    field_completions,
    field_prompt,
    read_consent,
    read_domain,
    read_field_answer,
    read_review_answer,
    review_prompt,
    stopped_line,
    who,
)
from elicitkit.elicitation.errors import InvalidAnswer
from elicitkit.elicitation.fields import (
    FieldError,
    FieldKind,
    FormField,
    answer_content,
    check_form,
    form_fields,
)
from elicitkit.elicitation.requests import FormRequest, Origin, UrlRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.elicitation.urls import assess_url
from elicitkit.runtime.stopping import stop_tasks

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output
    from rich.console import Console

    from elicitkit.client.handlers.terminal.reader import Reader
    from elicitkit.client.handlers.terminal.waiting import Screen, Watch

# rich and prompt_toolkit (and .view, .reader, .waiting, which are built on them) are imported by
# the methods that draw or read: ``import elicitkit`` exports TerminalHandler, and must not pay
# for a terminal UI that servers and CI clients never show.

__all__ = ["OpenUrl", "TerminalHandler"]

logger = logging.getLogger("elicitkit.client.handlers.terminal")

#: Opens a URL for the person: ``False`` means it could not; may be a coroutine function.
OpenUrl = Callable[[str], Any]


class TerminalHandler:
    """Answers elicitations in the terminal; use as ``Client(..., elicitation_callback=TerminalHandler())``.

    ``input`` / ``output``: where answers are read and prompts drawn: text streams (default
    stdin/stdout) or prompt_toolkit ``Input`` / ``Output`` objects (tests drive it through a
    pipe input). On a terminal prompt_toolkit reads the keys; otherwise, or with
    ``plain=True``, plain lines are read and echoed, so a transcript stays readable.
    ``console``: the rich console everything is drawn on (default: one on ``output``).
    ``open_url``: opens a consented URL (default :func:`webbrowser.open` in a thread, which
    honours ``BROWSER``); it may return ``False`` for "could not", a text to say instead of
    "Opened in your browser" (when it handed the URL to something else), or be a coroutine function.
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
        from prompt_toolkit.output import Output
        from rich.console import Console

        from elicitkit.client.handlers.terminal.view import View

        self._input = input
        self._output = output
        stream = output if output is not None and not isinstance(output, Output) else None
        # plain=True: no styles at all, even on a terminal (screen readers, transcripts, dumb terminals).
        styles: dict[str, Any] = {"color_system": None} if plain else {}
        self.console = console if console is not None else Console(file=stream, highlight=False, **styles)
        self._view = View(self.console)
        self.open_url: OpenUrl = open_url if open_url is not None else webbrowser.open
        self.completion_timeout = completion_timeout
        self.open_timeout = open_timeout
        self.plain = plain
        self.listen_keys = listen_keys
        self._reader: Reader | None = None
        self._screen: Screen | None = None
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
        await stop_tasks(set(self._watches))

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
                except Stop as stop:
                    return self._stopped(request.origin, stop, url=isinstance(request, UrlRequest))
                except asyncio.CancelledError:
                    self._view.withdrawn(request.origin)
                    raise

    def _get_reader(self) -> Reader:
        from elicitkit.client.handlers.terminal.reader import LineReader, make_reader

        if self._reader is None:
            self._reader = make_reader(self._input, self._output, self.console, self.plain)
            self._view.plain = isinstance(self._reader, LineReader)  # plain lines in: plain lines out
        return self._reader

    def _get_screen(self) -> Screen:
        from elicitkit.client.handlers.terminal.waiting import Screen

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError("TerminalHandler runs on asyncio (prompt_toolkit needs it), not on trio") from None
        if self._screen is None or self._loop is not loop:  # asyncio primitives belong to one loop
            self._screen, self._spinner, self._loop = Screen(), asyncio.Lock(), loop
        return self._screen

    def _stopped(self, origin: Origin | None, stop: Stop, *, url: bool = False) -> ElicitationResult[Any]:
        self._view.say(stopped_line(origin, stop, url=url), "yellow")
        return ElicitationResult.decline() if stop.action == "decline" else ElicitationResult.cancel()

    # -- forms ----------------------------------------------------------------------------

    async def _ask_form(self, reader: Reader, request: FormRequest) -> ElicitationResult[Any]:
        schema = request.requested_schema
        fields = form_fields(schema)
        title = schema.get("title")
        self._view.header(request.origin, request.message, title if isinstance(title, str) else None)
        if len(fields) == 1 and fields[0].kind is FieldKind.BOOLEAN:
            return await self._ask_yes_no(reader, request, fields[0])
        values: dict[str, Any] = {f.name: f.default if f.has_default else None for f in fields}
        if len(fields) == 1 and fields[0].kind is not FieldKind.MULTI:
            # One answer: typing it sends it (one turn, as a yes/no); Enter alone still reviews first.
            self._view.say(ONE_ANSWER_HOW, "dim")
            if await self._ask_field(reader, fields, 0, values) == "typed":
                schema = request.requested_schema
                if not check_form(schema, values):
                    with contextlib.suppress(InvalidAnswer):
                        content = answer_content(schema, values)
                        self._view.say(f"✓ Sent to {who(request.origin)}.", "green")
                        return ElicitationResult.accept(content)
            return await self._review(reader, request, fields, values)
        self._view.say(HELP, "dim")
        index = 0
        while index < len(fields):
            moved_back = await self._ask_field(reader, fields, index, values) == "back"
            index = max(0, index - 1) if moved_back else index + 1
        return await self._review(reader, request, fields, values)

    async def _ask_yes_no(self, reader: Reader, request: FormRequest, field: FormField) -> ElicitationResult[Any]:
        """A one-question yes/no: y or n is the answer and sends it; no review step to click through."""
        from rich.text import Text

        from elicitkit.client.handlers.terminal.reader import completer

        if field.description:
            self._view.indented(Text(clean(field.description), "italic"))
        self._view.say(YES_NO_HOW, "dim")
        prompt = [("class:label", clean(field.label, lines=False)), ("class:hint", " [y/n]"), ("class:arrow", ARROW)]
        while True:
            text = await reader.read(prompt, completer(["yes", "no"]))
            if command(text) == "help":
                self._view.say(HELP, "dim")
                continue
            try:
                value = field.parse(text) if text.strip() else None
            except FieldError as exc:
                self._view.problem(str(exc))
                continue
            if value is None:
                self._view.problem("Answer y or n (nothing is sent until you do).")
                continue
            try:
                content = answer_content(request.requested_schema, {field.name: value})
            except InvalidAnswer as exc:
                self._view.problem(exc.reason)
                continue
            self._view.say(f"✓ Sent {'yes' if value else 'no'} to {who(request.origin)}.", "green")
            return ElicitationResult.accept(content)

    async def _ask_field(
        self, reader: Reader, fields: list[FormField], index: int, values: dict[str, Any], *, review: bool = False
    ) -> str:
        """Ask one field until its answer fits: ``"typed"`` (an answer typed), ``"kept"`` (Enter
        alone kept the one shown), or ``"back"`` when the person went back (at review: unchanged)."""
        from elicitkit.client.handlers.terminal.reader import completer

        field = fields[index]
        current = values[field.name]
        self._view.field(field, index, len(fields), current)
        tab = completer(field_completions(field), field.kind is FieldKind.MULTI)
        while True:
            text = await reader.read(field_prompt(field, current), tab, secret=field.secret)
            step = read_field_answer(field, text, current, can_go_back=index != 0 or review)
            if isinstance(step, Back):
                return "back"
            if isinstance(step, ShowHelp):
                self._view.say(HELP, "dim")
                continue
            if isinstance(step, Problem):
                self._view.problem(step.reason)
                continue
            values[field.name] = step.value
            return "typed" if text.strip() else "kept"

    async def _review(
        self, reader: Reader, request: FormRequest, fields: list[FormField], values: dict[str, Any]
    ) -> ElicitationResult[Any]:
        from prompt_toolkit.completion import DummyCompleter

        schema = request.requested_schema
        prompt = review_prompt(len(fields))
        show = True
        while True:
            problems = check_form(schema, values)
            if show:
                self._view.review(fields, values, problems)
                show = False
            step = read_review_answer(fields, (await reader.read(prompt, DummyCompleter())).strip())
            if isinstance(step, Problem):
                self._view.problem(step.reason)
                continue
            if isinstance(step, Change):
                await self._ask_field(reader, fields, step.index, values, review=True)
                show = True
                continue
            if problems:
                self._view.problem("some answers do not fit yet; change the marked ones first")
                show = True
                continue
            try:
                content = answer_content(schema, values)
            except InvalidAnswer as exc:
                self._view.problem(exc.reason)
                continue
            self._view.say(f"✓ Sent to {who(request.origin)}.", "green")
            return ElicitationResult.accept(content)

    # -- URLs -----------------------------------------------------------------------------

    async def _ask_url(self, reader: Reader, request: UrlRequest) -> ElicitationResult[Any]:
        from prompt_toolkit.completion import DummyCompleter

        from elicitkit.client.handlers.terminal.reader import completer
        from elicitkit.client.handlers.terminal.waiting import Watch

        facts = assess_url(request.url)
        self._view.header(request.origin, request.message, reason=request.reason)  # the why before the ask
        self._view.url(facts)
        while not read_consent((await reader.read(CONSENT_PROMPT, completer(["yes", "no"]))).strip()):
            self._view.problem(CONSENT_AGAIN)
        if facts.lookalike:  # stop and confirm: a yes is not enough for a domain that imitates another
            self._view.say(f"To open it anyway, type its real name, {clean(facts.host, lines=False)}:", "bold")
            prompt = [("class:label", "Domain"), ("class:hint", " [or :decline]"), ("class:arrow", ARROW)]
            while not read_domain(await reader.read(prompt, DummyCompleter()), facts.host):
                self._view.problem("That is not its real name; nothing was opened. Type it exactly, or :decline.")
        opened, why = await self._open(request.url)
        if opened:
            self._view.say(why or "✓ Opened in your browser.", "green")
        else:
            self._view.say(
                f"Could not open a browser ({clean(why, lines=False)}); open this address yourself:", "yellow"
            )
            self._view.address(request.url)
        server = who(request.origin)
        if request.notifies_completion:
            self._watch(Watch(request, server, clean(facts.display_host or facts.host, lines=False)))
        else:
            self._view.say(f"{server} carries on when you are done there.", "dim")
        return ElicitationResult.accept()

    async def _open(self, url: str) -> tuple[bool, str]:
        """Open ``url`` with ``open_url``: (True, what it said instead, if anything), or (False, why).
        Never waits past open_timeout."""
        from elicitkit.client.handlers.terminal.reader import in_daemon_thread

        opener = self.open_url
        try:
            if inspect.iscoroutinefunction(opener):
                outcome = await asyncio.wait_for(opener(url), self.open_timeout)
            else:
                pending = in_daemon_thread(functools.partial(opener, url))
                outcome = await asyncio.wait_for(asyncio.shield(pending), self.open_timeout)
        except TimeoutError:
            return True, ""  # still starting: it has the URL, let it be
        except Exception as exc:
            logger.warning("could not open %s: %s", url, exc)
            return False, str(exc) or type(exc).__name__
        if isinstance(outcome, str):
            return True, outcome
        return (False, "no browser found") if outcome is False else (True, "")

    # -- waiting for completion -----------------------------------------------------------

    def _watch(self, watch: Watch) -> None:
        """Start waiting for the completion notice without holding up the accept."""
        from elicitkit.client.handlers.terminal.waiting import wait_for_completion

        screen = self._get_screen()
        assert self._spinner is not None
        waiting = wait_for_completion(
            watch,
            screen=screen,
            spinner=self._spinner,
            view=self._view,
            keys=self._get_reader().keys if self.listen_keys else None,
            timeout=self.completion_timeout,
        )
        task = asyncio.get_running_loop().create_task(waiting, name=f"elicitkit-wait-{watch.server}")
        self._watches.add(task)
        task.add_done_callback(self._watches.discard)
