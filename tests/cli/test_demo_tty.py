"""``elicitkit demo`` with a terminal attached: the questions are terminal forms, answered by keys."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pexpect
import pytest

pytestmark = pytest.mark.timeout(90)

ELICITKIT = Path(sys.executable).with_name("elicitkit")
ENTER = "\r"
ARROW = "\u203a"  # the prompt mark


def test_demo_walks_through_the_terminal_forms() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER", "NO_COLOR")}
    env.update(TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1", PYTHONUNBUFFERED="1")
    child = pexpect.spawn(str(ELICITKIT), ["demo"], env=env, encoding="utf-8", dimensions=(50, 160), timeout=30)
    try:
        child.expect("answers terminal forms")
        # 1. the booking form: another evening, the terrace, a cake; then send at review
        child.expect(r"Evening\S*\s*\[2026-12-27\].*" + ARROW)
        child.send("2026-12-28" + ENTER)
        child.expect("Seating.*" + ARROW)
        child.send("On the heated terrace" + ENTER)
        child.expect("Anything else.*" + ARROW)
        child.send("2" + ENTER)
        child.expect("Send\\?")
        child.send("s" + ENTER)  # sending is a typed choice: Enter alone does not send
        child.expect(r"Booked B001: 4 on 2026-12-28, on the heated terrace, with cake\.")
        # 2. URL mode: consent; no graphical browser here, so the demo's scripted visitor pays
        child.expect("Open it in your browser\\?")
        child.send("y" + ENTER)
        # said once, and not contradicted by "Opened in your browser" (issue 26.9)
        child.expect(r"No graphical browser here: a scripted visitor pays on the page instead\.")
        child.expect(r"Deposit for B001 paid; your table is confirmed\.")
        assert "Opened in your browser" not in child.before
        # 3. the 2026 delete: the empty folder goes without a question; say no for the other
        child.expect(r"Deleted /demo/empty\.")
        child.expect("Delete it\\?.*" + ARROW)
        child.send("n" + ENTER)  # a one-question yes/no: the answer itself is sent, no review step
        child.expect(r"Kept /demo/project\.")
        child.expect("audit log: 3 question")
        child.expect("demo finished")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r")


@pytest.mark.parametrize("columns", [40, 100])
def test_demo_prompts_keep_words_whole_at_40_and_100_columns(columns: int) -> None:
    """Issue 26.9: at 40 columns a prompt was wrapped mid-word (":decl" / "ine")."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER", "NO_COLOR")}
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    env.update(TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1", PYTHONUNBUFFERED="1")
    child = pexpect.spawn(str(ELICITKIT), ["demo"], env=env, encoding="utf-8", dimensions=(50, columns), timeout=30)
    seen: list[str] = []
    try:
        child.expect(r"Evening\S*\s*\[2026-12-27\][^\n]*" + ARROW)
        child.send(ENTER)
        child.expect("Seating[^\n]*" + ARROW)
        child.send("2" + ENTER)
        child.expect("Anything else[^\n]*" + ARROW)
        child.send(ENTER)
        child.expect("Send\\?")
        child.expect(ARROW)
        seen.append(child.before)
        child.send("s" + ENTER)
        child.expect("Open it in your browser\\?")
        child.expect(ARROW)
        seen.append(child.before)
        child.send("y" + ENTER)
        child.expect("Delete it\\?[^\n]*" + ARROW)
        child.send("n" + ENTER)
        child.expect("demo finished")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    for prompt in seen:
        text = ESCAPES.sub("", prompt)
        assert ":decline" in text and ":cancel" in text, text
