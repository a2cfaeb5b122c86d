"""The terminal form, driven through a real pseudo-terminal.

Each test runs ``terminal_driver.py`` (a real server and client in one process, with a
:class:`TerminalHandler` on the pty) under pexpect, types like a person, and checks both the
screen and what the server's tool actually received (the ``RESULT:`` line).
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest

pytestmark = pytest.mark.timeout(30)

DRIVER = Path(__file__).with_name("terminal_driver.py")
ROOT = Path(__file__).resolve().parents[4]
# CSI / OSC / charset escape sequences and carriage returns: what a screen does not show as text.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r")
ESC = "\x1b"
CTRL_C = "\x03"
ENTER = "\r"


class Terminal:
    """A pexpect child read as text: escape sequences stripped, searched forward from the last match."""

    def __init__(self, child: pexpect.spawn[str]) -> None:
        self.child = child
        self.raw = ""
        self.pos = 0
        self.eof = False

    @property
    def text(self) -> str:
        return _ESCAPES.sub("", self.raw)

    def expect(self, wanted: str, timeout: float = 8.0) -> str:
        """Wait until ``wanted`` appears after the previous match; returns the text up to its end."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text
            found = text.find(wanted, self.pos)
            if found >= 0:
                self.pos = found + len(wanted)
                return text[: self.pos]
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.eof:
                raise AssertionError(f"{wanted!r} did not appear; the screen so far:\n{text[-3000:]}")
            try:
                self.raw += self.child.read_nonblocking(65536, timeout=min(remaining, 0.5))
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                self.eof = True

    def type(self, *keys: str) -> None:
        for key in keys:
            self.child.send(key)

    def answer(self, prompt: str, text: str) -> None:
        """Wait for ``prompt`` (and its arrow), then type ``text`` and Enter."""
        self.expect(prompt)
        self.expect("\u203a")
        self.type(text + ENTER)

    def reply(self, text: str) -> None:
        """Type ``text`` and Enter at the next prompt (its question already seen)."""
        self.expect("\u203a")
        self.type(text + ENTER)

    def result(self) -> dict[str, object]:
        """The tool's answer: the JSON on the driver's ``RESULT:`` line."""
        self.expect("RESULT: ")
        start = self.pos
        line = self.expect("\n")[start:]
        parsed: dict[str, object] = json.loads(line)
        return parsed

    def finish(self) -> None:
        """The driver ends by itself, cleanly."""
        self.expect("DRIVER DONE")
        self.child.expect(pexpect.EOF, timeout=8)
        self.child.close()
        assert self.child.exitstatus == 0, self.text[-2000:]


@pytest.fixture
def browser(tmp_path: Path) -> Path:
    """A BROWSER that records the URL it was asked to open; returns where it writes it."""
    opened = tmp_path / "opened.txt"
    script = tmp_path / "fake-browser"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{opened}"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return opened


@pytest.fixture
def spawn(browser: Path) -> Iterator[Callable[..., Terminal]]:
    children: list[pexpect.spawn[str]] = []

    def start(*args: str, columns: int = 200, **extra: str) -> Terminal:
        env = dict(os.environ)
        env.update(
            TERM="xterm-256color",
            PROMPT_TOOLKIT_NO_CPR="1",  # pexpect is no terminal emulator: it never answers a CPR
            BROWSER=str(browser.with_name("fake-browser")),
            PYTHONUNBUFFERED="1",
        )
        env.pop("NO_COLOR", None)
        env.pop("COLUMNS", None)  # the pty's own size, not the parent's
        env.pop("LINES", None)
        env.update(extra)
        child = pexpect.spawn(
            sys.executable,
            [str(DRIVER), *args],
            env=env,
            cwd=str(ROOT),
            encoding="utf-8",
            dimensions=(50, columns),
            timeout=10,
        )
        children.append(child)
        return Terminal(child)

    yield start
    for child in children:
        if child.isalive():
            child.close(force=True)


def fill_order(term: Terminal, *, name: str = "Ada") -> None:
    """Name typed, everything else left at its default."""
    term.answer("Your name", name)
    for prompt in ("Size [Medium (10 inch)]", "Toppings [none]", "Quantity [1]", "Delivery (y/n) [yes]"):
        term.answer(prompt, "")


# ------------------------------------------------------------------------------ forms


def test_accept_sends_typed_answers(spawn: Callable[..., Terminal]) -> None:
    term = spawn("order")
    shown = term.expect("Your name")
    assert "Question from Pizzeria Napoli" in shown
    assert "What would you like to order?" in shown
    assert "Pizzeria Napoli, pizzeria 2.1.0" in shown and "in-memory:pizzeria" in shown
    term.expect("(required)")
    term.expect("Who the order is for")
    term.expect("2 to 20 characters")
    term.answer("Your name", "Ada Lovelace")
    term.answer("Size [Medium (10 inch)]", "")  # Enter: the default
    term.answer("Toppings [none]", "")
    term.expect("a whole number · from 1 to 10")
    term.answer("Quantity [1]", "3")
    term.expect("Deliver to your door?")
    term.answer("Delivery (y/n) [yes]", "n")
    review = term.expect("Send?")
    assert re.search(r"Your name \*\s*│\s*Ada Lovelace", review)
    assert re.search(r"Quantity\s*│\s*3", review)
    assert re.search(r"Delivery\s*│\s*no", review)
    term.expect("[s send · 1-5 change an answer · :decline · :cancel]")
    term.expect("\u203a")
    term.type(ENTER)  # Enter alone at review never sends...
    term.expect("✗ nothing is sent until you type s")
    term.answer("Send?", "s")  # ...the send key does
    term.expect("Sent to Pizzeria Napoli")
    assert term.result() == {
        "action": "accept",
        "data": {"name": "Ada Lovelace", "size": "m", "toppings": [], "quantity": 3, "delivery": False},
        "types": {"name": "str", "size": "str", "toppings": "list", "quantity": "int", "delivery": "bool"},
    }
    term.finish()


def test_titled_enum_and_multi_select(spawn: Callable[..., Terminal]) -> None:
    term = spawn("order")
    term.answer("Your name", "Bo")
    options = term.expect("Size [Medium (10 inch)]")
    assert "( ) 1) Small (8 inch)" in options
    assert "(•) 2) Medium (10 inch)" in options  # the default, marked
    assert "( ) 3) Large (12 inch)" in options
    term.expect("\u203a")
    term.type("large (12 INCH)" + ENTER)  # a title, any case
    toppings = term.expect("Toppings [none]")
    assert "[ ] 1) Extra cheese" in toppings and "[ ] 3) Fresh basil" in toppings
    assert "at most 2 choices" in toppings
    term.expect("\u203a")
    term.type("3, extra cheese" + ENTER)  # a number and a title
    term.answer("Quantity", "")
    term.answer("Delivery", "")
    review = term.expect("Send?")
    assert re.search(r"Size\s*│\s*Large \(12 inch\)", review)
    assert re.search(r"Toppings\s*│\s*Fresh basil, Extra cheese", review)
    # Change the multi-select at review with +/-: drop basil, add olives.
    term.reply("3")
    current = term.expect("Toppings [Fresh basil, Extra cheese]")
    assert "[x] 1) Extra cheese" in current and "[ ] 2) Black olives" in current and "[x] 3) Fresh basil" in current
    term.expect("\u203a")
    term.type("-3, +2" + ENTER)
    review = term.expect("Send?")
    assert re.search(r"Toppings\s*│\s*Extra cheese, Black olives", review)
    term.type("s" + ENTER)
    result = term.result()
    assert result["action"] == "accept"
    assert result["data"] == {
        "name": "Bo",
        "size": "l",
        "toppings": ["cheese", "olives"],
        "quantity": 1,
        "delivery": True,
    }
    term.finish()


def test_change_an_answer_at_review(spawn: Callable[..., Terminal]) -> None:
    term = spawn("order")
    fill_order(term, name="Ada")
    review = term.expect("Send?")
    assert re.search(r"Your name \*\s*│\s*Ada", review)
    term.reply("1")  # by number
    term.expect("Your name (required)")  # shown again with its rules
    term.answer("Your name [Ada]", "Grace")
    review = term.expect("Send?")
    assert re.search(r"Your name \*\s*│\s*Grace", review)
    term.reply("quantity")  # by name
    term.answer("Quantity [1]", "7")
    review = term.expect("Send?")
    assert re.search(r"Quantity\s*│\s*7", review)
    term.expect("\u203a")
    term.type("s" + ENTER)
    result = term.result()
    assert result["data"] == {"name": "Grace", "size": "m", "toppings": [], "quantity": 7, "delivery": True}
    term.finish()


def test_invalid_input_is_asked_again_with_the_reason(spawn: Callable[..., Terminal]) -> None:
    term = spawn("order")
    term.answer("Your name", "")  # required, no default
    term.expect("✗ This is required: please answer it.")
    term.answer("Your name", "A")
    term.expect("✗ Too short: use at least 2 characters (this has 1).")
    term.answer("Your name", "Al")
    term.answer("Size", "7")
    term.expect("✗ “7” is not one of the choices: pick Small (8 inch), Medium (10 inch), Large (12 inch).")
    term.answer("Size", "2")
    term.answer("Toppings", "1,2,3")
    term.expect("✗ Too many: choose at most 2 (you chose 3).")
    term.answer("Toppings", "pepperoni")
    term.expect("✗ “pepperoni” is not one of the choices")
    term.answer("Toppings", "2")
    term.answer("Quantity", "lots")
    term.expect("✗ Not a whole number: write digits only, like 42.")
    term.answer("Quantity", "11")
    term.expect("✗ Out of range: use a number from 1 to 10.")
    term.answer("Quantity", "10")
    term.answer("Delivery", "maybe")
    term.expect("✗ Answer yes or no.")
    term.answer("Delivery", "yes")
    term.answer("Send?", "x")
    term.expect("✗ nothing is sent until you type s · 1 to 5 changes an answer · :decline · :cancel")
    term.answer("Send?", "s")
    result = term.result()
    assert result["data"] == {"name": "Al", "size": "m", "toppings": ["olives"], "quantity": 10, "delivery": True}
    term.finish()


def test_back_goes_to_the_previous_question(spawn: Callable[..., Terminal]) -> None:
    term = spawn("order")
    term.answer("Your name", "Ada")
    term.answer("Size", ":back")
    term.answer("Your name [Ada]", "Ann")
    term.answer("Size", "1")
    for prompt in ("Toppings", "Quantity", "Delivery"):
        term.answer(prompt, "")
    term.answer("Send?", "s")
    result = term.result()
    assert result["data"] == {"name": "Ann", "size": "s", "toppings": [], "quantity": 1, "delivery": True}
    term.finish()


@pytest.mark.parametrize("where", ["field", "review"])
def test_decline(spawn: Callable[..., Terminal], where: str) -> None:
    term = spawn("order")
    if where == "field":
        term.answer("Your name", ":decline")
    else:
        fill_order(term)
        term.answer("Send?", ":decline")  # the same word as on a field
    term.expect("Declined: Pizzeria Napoli is told you will not answer.")
    assert term.result() == {"action": "decline"}
    term.finish()


@pytest.mark.parametrize(
    ("key", "where", "shown"),
    [
        (ESC, "field", "Cancelled (Esc)"),
        (CTRL_C, "field", "Cancelled (Ctrl-C)"),
        (ESC, "review", "Cancelled (Esc)"),
        (CTRL_C, "review", "Cancelled (Ctrl-C)"),
        (":cancel" + ENTER, "field", "Cancelled (:cancel)"),
        ("c" + ENTER, "review", "Cancelled (c)"),
    ],
)
def test_cancel(spawn: Callable[..., Terminal], key: str, where: str, shown: str) -> None:
    term = spawn("order")
    if where == "field":
        term.answer("Your name", "Ada")
        term.expect("Size")
    else:
        fill_order(term)
        term.expect("Send?")
    term.expect("\u203a")
    if key in (ESC, CTRL_C):
        term.type("half typed")  # what is on the line does not matter
    term.type(key)
    term.expect(shown)
    assert term.result() == {"action": "cancel"}
    term.finish()  # Ctrl-C did not kill the program


# ------------------------------------------------------------------------------ URLs


def test_url_consent_opens_browser_and_spinner_reports_completion(
    spawn: Callable[..., Terminal], browser: Path
) -> None:
    url = "https://pay.pizzeria.example/checkout/42?amount=18.50"
    term = spawn("pay", url)
    shown = term.expect("Open it in your browser? [y open · :decline · :cancel]")
    assert "Question from Pizzeria Napoli" in shown and "Pay 18.50 EUR for your order." in shown
    assert url in shown
    assert "domain: pay.pizzeria.example" in shown
    assert "⚠" not in shown  # https, plain ASCII: nothing to warn about
    assert not browser.exists()  # nothing opened before consent
    term.expect("\u203a")
    term.type("y" + ENTER)
    term.expect("Opened in your browser.")
    # The accept went back at once: the tool already returned while the wait goes on.
    assert term.result() == {"action": "accept"}
    term.expect("Waiting for Pizzeria Napoli to confirm you finished at pay.pizzeria.example")
    term.expect("[Enter keep waiting in the background · r retry now · c cancel]")
    term.expect("DRIVER: waiting")
    assert browser.read_text().splitlines() == [url]
    term.child.kill(signal.SIGUSR1)  # the payment provider reports: notifications/elicitation/complete
    term.expect("✓ completed: Pizzeria Napoli confirms you finished at pay.pizzeria.example.")
    term.finish()


@pytest.mark.parametrize("plain", ["0", "1"])
def test_a_32042_reason_is_shown_before_consent(spawn: Callable[..., Terminal], browser: Path, plain: str) -> None:
    """The server's reason (the -32042 error's message) is on screen before the person is asked to consent."""
    term = spawn("authorize", TERMINAL_DRIVER_PLAIN=plain)
    shown = term.expect("Open it in your browser? [y open · :decline · :cancel]")
    reason = "Your GitHub account must be linked before your private repositories can be listed."
    assert "Link your GitHub account." in shown
    why = shown.find("why: ")
    assert why >= 0, shown[-2000:]
    # Wrapped in the panel or not, the words come in order, before the address and the question.
    assert " ".join(re.sub(r"[│┃]", " ", shown[why:]).split()).startswith("why: " + reason)
    assert why < shown.find("github.example/login/oauth") < shown.find("Open it in your browser?")
    term.reply(":decline")
    term.expect("Declined: nothing was opened.")
    term.expect("REFUSED: " + reason)
    term.finish()
    assert not browser.exists()


def test_url_wait_stops_on_a_key(spawn: Callable[..., Terminal], browser: Path) -> None:
    term = spawn("pay")
    term.answer("Open it in your browser?", "yes")
    assert term.result() == {"action": "accept"}
    term.expect("r retry now · c cancel]")
    term.expect("DRIVER: waiting")
    term.type("c")
    term.expect("Stopped waiting for Pizzeria Napoli; it carries on when you finish at pay.pizzeria.example.")
    term.finish()
    assert "completed" not in term.text


def test_url_refused_is_a_decline_and_opens_nothing(spawn: Callable[..., Terminal], browser: Path) -> None:
    term = spawn("pay")
    term.answer("Open it in your browser?", "maybe")
    term.expect("✗ type y to open the page, :decline to refuse, or :cancel (Esc) to dismiss the question")
    term.answer("Open it in your browser?", ":decline")
    term.expect("Declined: nothing was opened.")
    assert term.result() == {"action": "decline"}
    term.finish()
    assert not browser.exists()


@pytest.mark.parametrize(("key", "how"), [(ESC, "Esc"), (CTRL_C, "Ctrl-C")])
def test_url_escape_cancels(spawn: Callable[..., Terminal], browser: Path, key: str, how: str) -> None:
    term = spawn("pay")
    term.expect("Open it in your browser?")
    term.expect("\u203a")
    term.type(key)
    term.expect(f"Cancelled ({how})")
    assert term.result() == {"action": "cancel"}
    term.finish()
    assert not browser.exists()


def test_url_warnings_for_look_alike_and_plain_http(spawn: Callable[..., Terminal], browser: Path) -> None:
    url = "http://xn--pypl-53dc.example:8080/login"  # "paypal" spelled with Cyrillic a's, over http
    term = spawn("pay", url)
    shown = term.expect("Open it in your browser?")
    assert url in shown
    # The real name first, then what it imitates, with the foreign letters named.
    assert "domain: xn--pypl-53dc.example\n" in shown
    assert "⚠ STOP: this domain is written to look like p\u0430yp\u0430l.example" in shown
    assert "letter 2, “\u0430”, is CYRILLIC SMALL LETTER A; letter 5, “\u0430”, is CYRILLIC SMALL LETTER A" in shown
    assert "⚠ this page is not encrypted (http, not https)" in shown
    assert "⚠ the domain is internationalised" in shown
    assert "⚠ the domain mixes letters from different alphabets" in shown
    term.reply("y")  # a yes is not enough...
    term.expect("To open it anyway, type its real name, xn--pypl-53dc.example:")
    term.answer("Domain", "paypal.example")
    term.expect("✗ That is not its real name; nothing was opened.")
    assert not browser.exists()
    term.answer("Domain", ":decline")
    term.expect("Declined: nothing was opened.")
    assert term.result() == {"action": "decline"}
    term.finish()
    assert not browser.exists()


def test_look_alike_opens_when_its_real_name_is_typed(spawn: Callable[..., Terminal], browser: Path) -> None:
    url = "https://xn--pple-43d.com/pay"
    term = spawn("pay", url)
    term.answer("Open it in your browser?", "y")
    term.answer("Domain", "XN--PPLE-43D.COM")
    term.expect("Opened in your browser.")
    assert term.result() == {"action": "accept"}
    term.expect("DRIVER: waiting")
    assert browser.read_text().splitlines() == [url]
    term.type(ENTER)  # keep waiting in the background: the status line goes, the wait does not
    term.expect("Waiting in the background; a line here says when Pizzeria Napoli confirms.")
    term.child.kill(signal.SIGUSR1)
    term.expect("✓ completed: Pizzeria Napoli confirms you finished at \u0430pple.com.")
    term.finish()


def test_retry_now_ends_the_wait_at_once(spawn: Callable[..., Terminal], browser: Path) -> None:
    term = spawn("pay")
    term.answer("Open it in your browser?", "y")
    assert term.result() == {"action": "accept"}
    term.expect("DRIVER: waiting")
    term.type("r")
    term.expect("Marked as finished at pay.pizzeria.example: a call waiting on it is retried now.")
    term.finish()


# ------------------------------------------------------------------------------ plain lines and transcripts


def test_plain_lines_on_a_terminal_ctrl_c_cancels(spawn: Callable[..., Terminal]) -> None:
    """plain=True reads cooked lines: Ctrl-C is SIGINT there, and still only dismisses the question."""
    term = spawn("order", TERMINAL_DRIVER_PLAIN="1")
    term.answer("Your name", "Ada")
    term.expect("Size [Medium (10 inch)]")
    term.expect("\u203a")
    term.type(CTRL_C)
    term.expect("Cancelled (Ctrl-C)")
    assert term.result() == {"action": "cancel"}
    term.finish()


def test_piped_input_gives_a_plain_transcript() -> None:
    """No terminal: plain lines in, plain lines out, answers echoed, no escape sequences."""
    answers = "Bo\nlarge (12 inch)\n1, 3\n\nn\n4\n2\ns\n"
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    done = subprocess.run(
        [sys.executable, str(DRIVER), "order"],
        input=answers,
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
        env=env,
        check=True,
    )
    out = done.stdout
    assert "\x1b" not in out
    assert not set("╭╮╰╯│─┃━") & set(out)  # no boxes, no table rules: lines a transcript or screen reader reads
    assert "Question from Pizzeria Napoli\n" in out and "  4. Quantity: 1\n" in out
    assert "Your name \u203a Bo\n" in out
    assert "Toppings [none] \u203a 1, 3\n" in out
    assert "Quantity [1] \u203a 2\n" in out  # changed at review
    assert done.stderr == ""
    line = next(x for x in out.splitlines() if x.startswith("RESULT: "))
    assert json.loads(line.removeprefix("RESULT: "))["data"] == {
        "name": "Bo",
        "size": "l",
        "toppings": ["cheese", "basil"],
        "quantity": 2,
        "delivery": False,
    }


# ------------------------------------------------------------------------------ yes/no, secrets, long option lists


def test_a_yes_no_question_is_one_step(spawn: Callable[..., Terminal]) -> None:
    term = spawn("confirm")
    shown = term.expect("Delete the old backups? [y/n]")
    assert "y or n sends that answer at once · :decline · :cancel" in shown
    term.reply("maybe")
    term.expect("✗ Answer yes or no.")
    term.reply("n")  # "no" is the answer, sent at once: no review, no second step
    term.expect("✓ Sent no to Pizzeria Napoli.")
    assert term.result() == {"action": "accept", "data": {"ok": False}, "types": {"ok": "bool"}}
    term.finish()


@pytest.mark.parametrize("plain", ["0", "1"])
def test_a_secret_is_never_shown(spawn: Callable[..., Terminal], plain: str) -> None:
    term = spawn("login", TERMINAL_DRIVER_PLAIN=plain)
    term.answer("User", "ada")
    term.answer("API key", "hunter2-secret")
    review = term.expect("Send?")
    assert "••••••••" in review
    term.reply(":back")  # changing it shows the mask, not the key, as what Enter keeps
    term.reply("2")
    term.expect("API key [••••••••]")
    term.reply("")
    term.answer("Send?", "s")
    result = term.result()
    assert result["data"] == {"user": "ada", "api_key": "hunter2-secret"}
    term.finish()
    assert term.text.count("hunter2-secret") == 1  # only the RESULT line the test prints


def test_option_numbers_line_up(spawn: Callable[..., Terminal]) -> None:
    term = spawn("many")
    term.expect("Slot")
    shown = term.expect("\u203a")
    assert "   ( )  9) 17:00\n" in shown and "   ( ) 10) 18:00\n" in shown
    term.type(":cancel" + ENTER)
    term.expect("Cancelled (:cancel)")
    term.finish()


def test_elicitkit_call_plain_on_a_terminal() -> None:
    """``elicitkit call --plain``: the terminal form in plain lines even on a terminal (no boxes, no colours)."""
    game = f"{sys.executable} {ROOT / 'examples' / 'elicitation' / 'guess_the_number.py'}"
    env = {**os.environ, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("NO_COLOR", None)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "elicitkit.cli", "call", game, "guess_the_number", "--plain"],
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        dimensions=(50, 200),
        timeout=20,
    )
    term = Terminal(child)
    try:
        shown = term.expect("Your answer [y/n]")
        assert "Question from guess-the-number\n" in shown and "Shall we play guess-the-number?" in shown
        assert not set("╭╮╰╯│") & set(shown)
        term.reply("n")
        term.expect("Sent no to guess-the-number.")
        term.expect("Another time, then.")
        child.expect(pexpect.EOF, timeout=10)
        assert "\x1b[" not in term.raw.split("Question from", 1)[1].split("Another time", 1)[0]  # no colours
    finally:
        child.close(force=True)


def test_ctrl_c_cancels_a_browser_question_and_the_server_is_told(tmp_path: Path) -> None:
    """``--ui browser``: Ctrl-C in the terminal while the page waits answers "cancel" (the tool hears it),
    and the question's URL is printed once, not again by a warning.

    The server runs over HTTP, started in its own session as a stdio child is (Ctrl-C at a
    question with a stdio child: tests/transports/test_stdio_session.py).
    """
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    game = f"{ROOT / 'examples' / 'elicitation' / 'guess_the_number.py'}:server"
    server = subprocess.Popen(
        [sys.executable, "-m", "elicitkit.cli", "serve", game, "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONUNBUFFERED": "1", "BROWSER": str(tmp_path / "no-browser")}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        child = pexpect.spawn(
            sys.executable,
            ["-m", "elicitkit.cli", "call", f"http://127.0.0.1:{port}/mcp", "guess_the_number", "--ui", "browser"],
            env=env,
            cwd=str(ROOT),
            encoding="utf-8",
            dimensions=(50, 200),
            timeout=20,
        )
        term = Terminal(child)
        try:
            term.expect("asks a question; answer it in your browser: http://127.0.0.1:")
            term.expect("open the address above yourself")
            child.sendintr()
            term.expect("Cancelled (Ctrl-C): guess-the-number is told you dismissed it.")
            term.expect("Another time, then.")  # the tool got "cancel" and answered
            child.expect(pexpect.EOF, timeout=10)
            child.close()
            assert child.exitstatus == 0
            assert term.text.count("/q/") == 1  # the question's URL, printed once
        finally:
            child.close(force=True)
    finally:
        server.terminate()
        server.wait(10)


# ------------------------------------------------------------------------------ issue 26, point 9


def test_one_choice_is_one_step(spawn: Callable[..., Terminal]) -> None:
    """A form of one answer takes one turn, as a yes/no does: typing it sends it."""
    term = spawn("seat")
    term.expect("your answer is sent as soon as you type it")
    term.answer("Seating", "2")
    term.expect("✓ Sent to Pizzeria Napoli.")
    result = term.result()
    assert result["data"] == {"seating": "terrace"}
    assert "Send?" not in term.text
    term.finish()


def test_one_answer_kept_with_enter_alone_is_shown_before_sending(spawn: Callable[..., Terminal]) -> None:
    term = spawn("cores")
    screen = term.expect("[1/1] ")
    shown = term.expect("\u203a")[len(screen) :]  # the heading, the hints under it, the prompt
    heading, *hints, _prompt = [line.strip() for line in shown.splitlines() if line.strip()]
    assert heading.casefold() == "cpu cores (required)"
    assert hints == ["a whole number · from 1 to 64"]  # the description only repeated the label: said once
    term.type(ENTER)
    term.expect("✗ This is required: please answer it.")
    term.reply("4")
    assert term.result()["data"] == {"cpu_cores": 4}
    term.finish()


def test_a_choice_error_with_commas_in_titles_is_unambiguous(spawn: Callable[..., Terminal]) -> None:
    term = spawn("extras")
    term.answer("Also fine", "Inside, terrace")
    term.expect(
        "✗ “Inside” is not one of the choices (names hold commas: type numbers, like 1,3): "
        "pick 1 “Inside, by the window”; 2 “On the heated terrace”; 3 “At the bar”."
    )
    term.answer("Also fine", "Inside, by the window")  # a title holding commas, typed whole
    term.answer("Send?", "s")
    assert term.result()["data"] == {"places": ["window"]}
    term.finish()


def test_prompts_wrap_between_words_at_40_columns(spawn: Callable[..., Terminal]) -> None:
    term = spawn("order", columns=40)
    fill_order(term)
    screen = term.expect("Send?")
    term.expect("\u203a")
    prompt = term.text[len(screen) - len("Send?") :]
    assert ":decline" in prompt and ":cancel]" in prompt, prompt  # whole words, wherever the line breaks
    term.type("s" + ENTER)
    term.result()
    term.finish()
