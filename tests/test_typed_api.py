"""The public names are real classes to a type checker, not ``Any``.

A user's file does ``from elicitkit import *`` and ``from elicitkit.errors import ...``; mypy
--strict must see each name as the class it is (``reveal_type``), and accept the file.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import elicitkit
import elicitkit.errors

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_strict_sees_classes_for_the_public_names(tmp_path: Path) -> None:
    names = [n for n in elicitkit.__all__ if n != "__version__"]
    errors = list(elicitkit.errors.__all__)
    lines = [
        "from elicitkit import *",
        "from elicitkit.errors import " + ", ".join(errors),
        "",
        *(f"reveal_type({name})" for name in names),
        *(f"reveal_type({name})" for name in errors),
        "",
        "def handle(exc: MCPError) -> int:",
        "    return exc.code",
        "",
        "reveal_type(handle)",
    ]
    user = tmp_path / "user_code.py"
    user.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(user),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    revealed = re.findall(r'note: Revealed type is "(.*)"', run.stdout)
    problems = [line for line in run.stdout.splitlines() if line.startswith("user_code.py") and ": error:" in line]
    assert problems == [], run.stdout
    assert len(revealed) == len(names) + len(errors) + 1, run.stdout
    for name, shown in zip([*names, *errors], revealed, strict=False):
        assert shown != "Any" and "elicitkit." in shown, (name, shown)
        assert re.search(rf"\b{name}\b", shown), (name, shown)  # the class itself (its constructor)
    assert revealed[-1] in (
        "def (exc: elicitkit.protocol.errors.MCPError) -> int",
        "def (exc: elicitkit.protocol.errors.MCPError) -> builtins.int",
    )
