"""Running the real ``elicitkit`` command for the CLI tests: one at a time, or a batch in parallel.

Every run has stdin at /dev/null and its output piped, so neither is a terminal and
``--ui auto`` picks the CI handler. A batch starts its commands together (each in a fresh
interpreter, a few in flight at once) and returns once all have finished; the tests then
assert on each :class:`Ran` by name. HTTP servers are started on a free port and handed
over only once they accept connections; every process is stopped on the way out.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kit.processes import serve_on_free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ELICITATION = EXAMPLES / "elicitation"
HERE = Path(__file__).resolve().parent
ASKING_SERVER = HERE / "asking_server.py"
OFFICIAL_ELICITATION_SERVER = ROOT / "tests" / "interop" / "peers" / "official_elicitation_server.py"

RUN_TIMEOUT = 30.0  # one command, start to finish: a hang guard (a cold start on a busy machine is slow)
PARALLEL = max(2, min(8, 2 * (os.cpu_count() or 1)))


def elicitkit_command() -> list[str]:
    """The console script installed next to this interpreter, else ``python -m elicitkit.cli``."""
    script = Path(sys.executable).parent / ("elicitkit.exe" if os.name == "nt" else "elicitkit")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "elicitkit.cli"]


ELICITKIT = elicitkit_command()


def server_command(*argv: str | Path) -> str:
    """A SERVER argument for ``elicitkit call``: a command line run with this interpreter."""
    return shlex.join([sys.executable, *map(str, argv)])


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)  # plain transcripts: rich and click must see pipes as pipes
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass(frozen=True)
class Ran:
    argv: list[str]
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    def __str__(self) -> str:  # what a failed assertion shows
        return f"$ {shlex.join(self.argv)}\nexit {self.code}\n--- stdout\n{self.stdout}--- stderr\n{self.stderr}"

    def expect(self, code: int = 0) -> Ran:
        assert self.code == code, str(self)
        assert "Traceback" not in self.stderr, str(self)
        return self


def run(args: Sequence[str], *, command: Sequence[str] | None = None, timeout: float = RUN_TIMEOUT) -> Ran:
    """Run ``elicitkit ARGS`` (or ``command``) to completion, not on a terminal."""
    argv = [*(ELICITKIT if command is None else command), *args]
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env=child_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Ran(argv, done.returncode, done.stdout, done.stderr)


@dataclass
class Call:
    """One ``elicitkit`` run of a batch. ``defaults``: written to a file and passed as ``--defaults``."""

    args: list[str]
    defaults: Mapping[str, Any] | str | None = None
    defaults_suffix: str = ".json"
    command: list[str] | None = None


def write_defaults(directory: Path, name: str, call: Call) -> list[str]:
    if call.defaults is None:
        return []
    path = directory / f"{name}{call.defaults_suffix}"
    text = call.defaults if isinstance(call.defaults, str) else json.dumps(call.defaults)
    path.write_text(text, encoding="utf-8")
    return ["--defaults", str(path)]


def run_batch(calls: Mapping[str, Call], directory: Path) -> dict[str, Ran]:
    """Run every call, several at once; the results by name."""

    def one(name: str) -> Ran:
        call = calls[name]
        return run([*call.args, *write_defaults(directory, name, call)], command=call.command)

    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        return dict(zip(calls, pool.map(one, calls), strict=True))


# ----------------------------------------------------------------------------- HTTP servers


@dataclass(frozen=True)
class Served:
    url: str
    port: int
    process: subprocess.Popen[bytes]
    log: IO[bytes]

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")


@contextlib.contextmanager
def http_server(argv_for_port: Callable[[int], list[str]], name: str) -> Iterator[Served]:
    """Run ``argv_for_port(port)`` on a free port; yield it once the port accepts connections.

    The server is stopped on the way out (SIGTERM, then SIGKILL) unless the caller did already.
    """
    with serve_on_free_port(argv_for_port, name, cwd=ROOT, env=child_env()) as (port, proc, log):
        yield Served(f"http://127.0.0.1:{port}/mcp", port, proc, log)
