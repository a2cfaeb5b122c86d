"""``elicitkit demo`` without a terminal: the CI handler answers, a scripted visitor pays the deposit.

Run three ways (``--ui ci``, ``--ui auto`` with stdin and stdout not a terminal, and
``python -m elicitkit.demo``), in parallel; each transcript must tell the whole story in order.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from ._support import Call, Ran, run_batch

pytestmark = pytest.mark.timeout(90)

RUNS = {
    "ci": Call(["demo", "--ui", "ci"]),
    "auto": Call(["demo"]),
    "module": Call([], command=[sys.executable, "-m", "elicitkit.demo"]),
}

# The transcript, in order: (the line, stripped) or a pattern for lines with ports and ids in them.
STORY: list[str | re.Pattern[str]] = [
    re.compile(r"─+ elicitkit demo: a server that asks, a client that answers ─+"),
    re.compile(r"server  elicitkit-demo on http://127\.0\.0\.1:\d+/mcp \(Streamable HTTP, uvicorn\)"),
    "answers CI handler: answers come from defaults",
    "1. Book a table protocol 2025-11-25: the server asks in the middle of the call",
    'call   book_table {"date": "2026-12-24", "party_size": 4} (Christmas Eve is full)',
    "asks   Bistro Elicit (demo): We are full on 2026-12-24 for 4. Pick another evening?",
    "- Evening (date, default '2026-12-27')",
    "- Seating (one of: Inside, by the window, On the heated terrace, At the bar)",
    "- Anything else? (any of: A high chair, A birthday cake, Step-free access)",
    "answer accept: Seating = On the heated terrace; Anything else? = A birthday cake; Evening = 2026-12-27",
    "result Booked B001: 4 on 2026-12-27, on the heated terrace, with cake.",
    "2. Pay the deposit URL mode: the card details never pass through MCP",
    'call   pay_deposit {"booking_id": "B001", "wait_seconds": 120}',
    "asks   Bistro Elicit (demo): Pay the 20 EUR deposit for booking B001 on the bank's page.",
    re.compile(r"open (?P<url>http://127\.0\.0\.1:\d+/pay/(?P<id>pay-[\w-]+))"),
    re.compile(r"\(no person at a browser: a scripted visitor opens http://127\.0\.0\.1:\d+/pay/pay-[\w-]+ and pays\)"),
    "answer accept",
    "result Deposit for B001 paid; your table is confirmed.",
    re.compile(r"3\. Delete a folder protocol 2026-07-28: stateless; .*"),
    'call   delete_folder {"path": "/demo/empty"}',
    "result Deleted /demo/empty.",
    'call   delete_folder {"path": "/demo/project"}',
    "asks   Bistro Elicit (demo): /demo/project holds 3 files (main.py, README.md, notes.txt). Delete it?",
    "- Delete it? (boolean)",
    "answer accept: Delete it? = yes",
    "result Deleted /demo/project.",
    "audit log: 3 question(s): form accept, url accept, form accept",
    re.compile(r"─+ demo finished ─+"),
]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    return run_batch(RUNS, Path(tmp_path_factory.mktemp("demo")))


def matches(expected: str | re.Pattern[str], line: str) -> re.Match[str] | bool | None:
    return expected.fullmatch(line) if isinstance(expected, re.Pattern) else expected == line


@pytest.mark.parametrize("how", list(RUNS))
def test_demo_transcript(ran: dict[str, Ran], how: str) -> None:
    result = ran[how].expect(0)
    assert "ERROR" not in result.stderr, str(result)
    lines = [line.strip() for line in result.lines if line.strip()]
    # every step of the story, in this order (other lines, the notice among them, may come between)
    position = 0
    found: dict[str, str] = {}
    for expected in STORY:
        while position < len(lines) and not matches(expected, lines[position]):
            position += 1
        assert position < len(lines), f"missing, or out of order: {expected!r}\n{result}"
        match = matches(expected, lines[position])
        if isinstance(match, re.Match):
            found.update(match.groupdict())
        position += 1
    # the completion notice names the payment the page was opened for, after the visit and before the end
    notice = f"notice the server reports {found['id']} complete"
    assert lines.count(notice) == 1, str(result)
    assert lines.index(notice) > lines.index(f"open {found['url']}")
    assert lines[-1].startswith("─") and "demo finished" in lines[-1]
