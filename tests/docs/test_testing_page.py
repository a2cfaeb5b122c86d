"""docs/testing.md runs: every ``python`` block that names its file is written out and run by pytest.

The blocks are the page's worked examples (one per feature of the kit); they run together in
a fresh directory, as a user who copied them would run them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.timeout(180)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCK = re.compile(r"```python\n# file: (?P<name>[\w.]+)\n(?P<code>.*?)```", re.DOTALL)


def blocks() -> dict[str, str]:
    found = {match["name"]: match["code"] for match in BLOCK.finditer(PAGE.read_text())}
    assert found, "no runnable blocks in docs/testing.md"
    return found


def test_the_first_test_is_under_30_lines() -> None:
    """The issue's promise: a tool that asks twice and handles a decline, tested in under 30 lines."""
    first = blocks()["test_first.py"]
    assert len(first.splitlines()) < 30
    assert "decline()" in first and "assert_messages" in first


def test_every_example_on_the_page_passes(pytester: pytest.Pytester) -> None:
    files = blocks()
    assert {"bookings.py", "test_first.py", "test_person.py", "test_awkward.py", "test_asked.py"} <= set(files)
    assert {"test_matrix.py", "test_tasks.py", "test_faults.py", "test_snapshots.py"} <= set(files)
    for name, code in files.items():
        pytester.path.joinpath(name).write_text(code)
    # In a fresh interpreter each, as a user runs them (and with a shallow stack: CPython 3.11 can
    # fail to parse a module imported for the first time deep inside a nested in-process pytest).
    written = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--elicitkit-update-snapshots", "test_snapshots.py"
    )
    written.assert_outcomes(passed=3)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0, result.stdout.str()[-6000:]
    assert outcomes["passed"] >= 30
    assert (
        pytester.path / "__snapshots__" / "test_snapshots" / "test_the_questions_of_book[2026-07-28].json"
    ).is_file()
