"""The server and client of docs/asking.md fit each other: run together, the call books a table.

(The README's pair once did not: the server asked ``accept_alternative``, the client answered
``try_other``, and the call failed while the script exited 0. Issue 26, point 1.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "asking.md"
BLOCK = re.compile(r"```python\n# file: (?P<name>[\w.]+)\n(?P<code>.*?)```", re.DOTALL)


def test_the_asking_page_pair_runs(tmp_path: Path) -> None:
    files = {m["name"]: m["code"] for m in BLOCK.finditer(PAGE.read_text(encoding="utf-8"))}
    assert set(files) == {"bistro_page.py", "client_page.py"}
    for name, code in files.items():
        (tmp_path / name).write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, "client_page.py"], cwd=tmp_path, capture_output=True, text=True, timeout=90)
    assert (done.returncode, done.stdout) == (0, "Booked a table for 2 on 2025-12-27.\n"), done.stderr


def test_an_answer_that_does_not_fit_fails_the_script(tmp_path: Path) -> None:
    """The page's client exits 1 when its answer does not fit the form, and says which field."""
    files = {m["name"]: m["code"] for m in BLOCK.finditer(PAGE.read_text(encoding="utf-8"))}
    (tmp_path / "bistro_page.py").write_text(files["bistro_page.py"], encoding="utf-8")
    wrong = files["client_page.py"].replace('"accept_alternative": True', '"try_other": True')
    assert wrong != files["client_page.py"]
    (tmp_path / "client_page.py").write_text(wrong, encoding="utf-8")
    done = subprocess.run([sys.executable, "client_page.py"], cwd=tmp_path, capture_output=True, text=True, timeout=90)
    assert done.returncode == 1
    assert "try_other: unknown field(s)" in done.stdout + done.stderr
