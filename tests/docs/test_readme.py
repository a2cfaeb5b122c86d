"""README.md's first hour runs exactly as written, in a fresh virtual environment.

The section "Your first hour" is a newcomer's path: install, one server, one client, one test,
one HTTP run. This test writes each ``# file:`` block to a fresh directory, runs every ``bash``
block in one shell, in order (the first creates the venv and installs with the documented
command), and compares what each printed with the ``text`` block that follows it in the README.
Two things are substituted, and only these: ``/path/to/elicitkit`` (this checkout) and the port
8000 (a free one: the machine may be running something there). pip uses its ordinary cache.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kit.processes import free_port

pytestmark = pytest.mark.timeout(900)

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BLOCK = re.compile(r"```(?P<lang>\w+)\n(?P<body>.*?)```", re.DOTALL)
MARK = "@@@ README block {} @@@"


def first_hour() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Your first hour")
    return text[start : text.index("\n## ", start + 1)]


def blocks() -> list[tuple[str, str]]:
    return [(m["lang"], m["body"]) for m in BLOCK.finditer(first_hour())]


def test_readme_opens_with_the_two_setup_commands() -> None:
    lang, body = next((m["lang"], m["body"]) for m in BLOCK.finditer(README.read_text(encoding="utf-8")))
    assert (lang, body) == ("bash", "bash scripts/demo.sh\nbash scripts/test.sh\n")


def test_the_path_has_one_server_one_client_one_test_one_http_run() -> None:
    files = [body.split("\n", 1)[0] for lang, body in blocks() if lang == "python"]
    assert files == ["# file: bistro.py", "# file: client.py", "# file: test_bistro.py"]
    shell = "\n".join(body for lang, body in blocks() if lang == "bash")
    assert 'pip install -e "/path/to/elicitkit[testing]"' in shell
    assert "python -m pytest" in shell and "--transport http" in shell


def test_the_first_hour_runs_as_written(tmp_path: Path) -> None:
    port = str(free_port())
    project = tmp_path / "first-hour"
    project.mkdir()
    script = ["set -e"]
    expected: dict[int, str] = {}
    shell_blocks = 0
    for lang, body in blocks():
        if lang == "python":
            name = re.match(r"# file: ([\w.]+)\n", body)
            assert name, f"a python block without '# file: NAME': {body[:80]!r}"
            (project / name[1]).write_text(body, encoding="utf-8")
        elif lang == "bash":
            body = body.replace("/path/to/elicitkit", str(ROOT)).replace("8000", port)
            script += [f"echo '{MARK.format(shell_blocks)}'", body]
            shell_blocks += 1
        elif lang == "text":
            expected[shell_blocks - 1] = body
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    here = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != here)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=840,
    )
    said = f"exit {done.returncode}\n--- stdout\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}"
    assert done.returncode == 0, said
    outputs = re.split(r"@@@ README block \d+ @@@\n", done.stdout)[1:]
    assert len(outputs) == shell_blocks, said
    for number, text in expected.items():
        assert outputs[number] == text, f"block {number}: expected\n{text}\ngot\n{outputs[number]}\n{said}"
    assert re.search(r"\b3 passed\b", next(out for out in outputs if "passed" in out)), said
    assert (project / ".venv" / "bin" / "elicitkit").is_file()  # installed by the documented command
