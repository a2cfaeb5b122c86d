"""Drive the official MCP conformance suite (``@modelcontextprotocol/conformance``) from pytest.

``scripts/bootstrap.sh`` installs node 22 and the suite, at the versions in
``CONFORMANCE_VERSIONS``, into the cache directory (``$ELICITKIT_CACHE``, default
``<repo>/.cache``).  Nothing here skips a test when they are missing: it raises
``RuntimeError`` saying to run the bootstrap script.

What the suite writes into its ``-o DIR`` output directory (both 0.1.16 and 0.2.0-alpha.12):

* client mode: ``DIR/<scenario>-<timestamp>/`` holding ``checks.json``, plus ``stdout.txt`` and
  ``stderr.txt`` (the client process's output);
* server mode: one ``DIR/server-<scenario>-<timestamp>/checks.json`` per scenario run;

where ``<timestamp>`` is an ISO time with ``:`` and ``.`` replaced by ``-``
(``2026-01-02T03-04-05-678Z``) and a scenario name with a ``/`` in it (``auth/...``) makes a
nested directory.  ``checks.json`` is a JSON array of objects with ``id``, ``name``,
``description``, ``status`` (``SUCCESS``, ``FAILURE``, ``WARNING``, ``INFO`` or ``SKIPPED``),
``timestamp`` and optionally ``errorMessage``, ``details`` and ``specReferences``.  The same id
may occur several times in one scenario.

Pitfalls the ``Result`` guards against: a client that does nothing at all gets zero checks
and exit code 0 ("OVERALL: PASSED"); a scenario not applicable at the requested
``--spec-version`` prints ``SKIPPED: ...``, writes nothing and exits 0.  Both make
``Result.ok`` false.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CONFORMANCE_VERSIONS",
    "LATEST",
    "NODE_MAJOR",
    "STABLE",
    "Check",
    "Result",
    "ScenarioRun",
    "cache_dir",
    "conformance_entry",
    "node_binary",
    "python_command",
    "run_client_scenario",
    "run_client_suite",
    "run_conformance",
    "run_server_suite",
]

# Keep in sync with scripts/bootstrap.sh.
NODE_MAJOR = 22
LATEST = "0.2.0-alpha.12"
STABLE = "0.1.16"
CONFORMANCE_VERSIONS: tuple[str, ...] = (LATEST, STABLE)

REPO_ROOT = Path(__file__).resolve().parents[2]
_BOOTSTRAP_HINT = "run `bash scripts/bootstrap.sh` from the repository root"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TIMESTAMP_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
_STATUSES = ("SUCCESS", "FAILURE", "WARNING", "INFO", "SKIPPED")


# ------------------------------------------------------------------ locations


def cache_dir() -> Path:
    """The cache directory used by scripts/bootstrap.sh ($ELICITKIT_CACHE, default <repo>/.cache)."""
    raw = os.environ.get("ELICITKIT_CACHE")
    if not raw:
        return REPO_ROOT / ".cache"
    path = Path(raw).expanduser()
    return path if path.is_absolute() else REPO_ROOT / path


def node_binary() -> Path:
    """Path of the node 22 binary installed by scripts/bootstrap.sh."""
    path = cache_dir() / f"node{NODE_MAJOR}" / "node_modules" / ".bin" / "node"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise RuntimeError(f"node {NODE_MAJOR} is not installed at {path}; {_BOOTSTRAP_HINT}")
    return path


def conformance_entry(version: str) -> Path:
    """Path of ``dist/index.js`` of the conformance suite at ``version``."""
    if version not in CONFORMANCE_VERSIONS:
        raise ValueError(
            f"conformance version {version!r} is not one scripts/bootstrap.sh installs "
            f"({', '.join(CONFORMANCE_VERSIONS)})"
        )
    path = (
        cache_dir()
        / "conformance"
        / version
        / "node_modules"
        / "@modelcontextprotocol"
        / "conformance"
        / "dist"
        / "index.js"
    )
    if not path.is_file():
        raise RuntimeError(f"conformance suite {version} is not installed at {path}; {_BOOTSTRAP_HINT}")
    return path


def python_command(*args: str) -> str:
    """A shell command line running this interpreter (the venv's) with ``args``.

    Handy as the ``command`` of ``run_client_scenario``:
    ``python_command("-m", "elicitkit.testing.conformance_client")``.
    """
    return shlex.join([sys.executable, *args])


# ------------------------------------------------------------------ results


@dataclass(frozen=True)
class Check:
    """One entry of a scenario's checks.json."""

    scenario: str
    id: str
    name: str
    status: str
    description: str
    error_message: str | None = None
    details: Any = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def failed(self) -> bool:
        return self.status == "FAILURE"

    def describe(self, max_details: int = 600) -> str:
        """One readable line (or a few): scenario, id, status, description and why."""
        text = f"[{self.scenario}] {self.id} {self.status}: {self.description}"
        reason = self.error_message
        details = self.details
        if reason is None and isinstance(details, dict) and isinstance(details.get("message"), str):
            reason = details["message"]
            details = {k: v for k, v in details.items() if k != "message"} or None
        if reason:
            text += f"\n      error: {reason}"
        if details not in (None, {}, []):
            dumped = json.dumps(details, sort_keys=True, default=str)
            if len(dumped) > max_details:
                dumped = dumped[:max_details] + "...(truncated)"
            text += f"\n      details: {dumped}"
        return text


@dataclass(frozen=True)
class ScenarioRun:
    """One scenario's output directory."""

    scenario: str
    directory: Path
    checks: tuple[Check, ...]
    client_stdout: str | None = None  # client mode only
    client_stderr: str | None = None  # client mode only


@dataclass
class Result:
    """Outcome of one invocation of the conformance suite."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    output_dir: Path | None = None
    scenarios: list[ScenarioRun] = field(default_factory=list)
    timed_out: bool = False
    skipped: str | None = None  # the suite's "SKIPPED: ..." message, if it skipped the scenario
    parse_errors: list[str] = field(default_factory=list)
    label: str = "conformance"

    @property
    def checks(self) -> list[Check]:
        return [check for run in self.scenarios for check in run.checks]

    def by_status(self, status: str) -> list[Check]:
        return [check for check in self.checks if check.status == status]

    def failures(self) -> list[Check]:
        """Every check with status FAILURE."""
        return self.by_status("FAILURE")

    def warnings(self) -> list[Check]:
        return self.by_status("WARNING")

    def check_ids(self, status: str | None = None) -> set[str]:
        return {c.id for c in self.checks if status is None or c.status == status}

    def problems(self) -> list[str]:
        """Why ``ok`` is false, one readable reason per entry (empty when ok)."""
        out: list[str] = []
        if self.timed_out:
            out.append("the conformance suite timed out and was killed")
        if self.skipped is not None:
            out.append(f"the suite skipped the scenario: {self.skipped}")
        out.extend(f"unreadable output: {err}" for err in self.parse_errors)
        failures = self.failures()
        if failures:
            out.append(f"{len(failures)} check(s) failed: " + ", ".join(sorted({c.id for c in failures})))
        if self.returncode != 0 and not self.timed_out and not failures:
            out.append(f"exit code {self.returncode} without any failing check (see output below)")
        if self.output_dir is not None and not self.timed_out and self.skipped is None:
            if not self.scenarios:
                out.append("no checks.json was written")
            elif not any(c.status in ("SUCCESS", "FAILURE") for c in self.checks):
                out.append("no check passed or failed (did the client/server do anything?)")
        return out

    @property
    def ok(self) -> bool:
        return not self.problems()

    def summary(self) -> str:
        """A readable report: verdict, counts, every failed and warning check, output tails."""
        counts = {s: len(self.by_status(s)) for s in _STATUSES}
        verdict = "PASSED" if self.ok else "FAILED"
        lines = [
            f"{self.label}: {verdict}",
            f"  command: {shlex.join(self.args)}",
            f"  exit code: {self.returncode}" + (" (timed out)" if self.timed_out else ""),
            f"  scenarios: {len(self.scenarios)}; checks: {len(self.checks)} = "
            + ", ".join(f"{n} {s.lower()}" for s, n in counts.items()),
        ]
        if self.output_dir is not None:
            lines.append(f"  output dir: {self.output_dir}")
        problems = self.problems()
        if problems:
            lines.append("problems:")
            lines.extend(f"  - {p}" for p in problems)
        failures = self.failures()
        if failures:
            lines.append("FAILED checks:")
            lines.extend(f"  {c.describe()}" for c in failures)
        warnings = self.warnings()
        if warnings:
            lines.append("WARNING checks:")
            lines.extend(f"  {c.describe()}" for c in warnings)
        if not self.ok:
            for run in self.scenarios:
                if run.client_stderr and run.client_stderr.strip():
                    lines.append(f"client stderr [{run.scenario}] (last lines):")
                    lines.extend(f"  | {ln}" for ln in _tail(run.client_stderr, 25))
            if not failures or (self.returncode != 0 and not self.scenarios):
                lines.append("suite stdout (last lines):")
                lines.extend(f"  | {ln}" for ln in _tail(self.stdout, 30))
                lines.append("suite stderr (last lines):")
                lines.extend(f"  | {ln}" for ln in _tail(self.stderr, 30))
        return "\n".join(lines)

    def assert_ok(self) -> None:
        """Raise AssertionError carrying ``summary()`` unless ``ok``."""
        if not self.ok:
            raise AssertionError(self.summary())

    def __str__(self) -> str:
        return self.summary()


def _tail(text: str, n: int) -> list[str]:
    return text.rstrip("\n").splitlines()[-n:] if text.strip() else ["(empty)"]


def _scenario_name(rel_dir: str, mode: str) -> str:
    name = _TIMESTAMP_SUFFIX.sub("", rel_dir)
    if mode == "server" and name.startswith("server-"):
        name = name[len("server-") :]
    return name


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None


def parse_output_dir(output_dir: Path, mode: str) -> tuple[list[ScenarioRun], list[str]]:
    """Read every ``checks.json`` below ``output_dir``; ``mode`` is "client" or "server"."""
    runs: list[ScenarioRun] = []
    errors: list[str] = []
    for checks_file in sorted(output_dir.rglob("checks.json")):
        directory = checks_file.parent
        scenario = _scenario_name(directory.relative_to(output_dir).as_posix(), mode)
        try:
            data = json.loads(checks_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            errors.append(f"{checks_file}: {exc}")
            continue
        if not isinstance(data, list):
            errors.append(f"{checks_file}: expected a JSON array, got {type(data).__name__}")
            continue
        checks: list[Check] = []
        for item in data:
            if not isinstance(item, dict):
                errors.append(f"{checks_file}: check entry is not an object: {item!r}")
                continue
            error_message = item.get("errorMessage")
            checks.append(
                Check(
                    scenario=scenario,
                    id=str(item.get("id", "?")),
                    name=str(item.get("name", "")),
                    status=str(item.get("status", "?")),
                    description=str(item.get("description", "")),
                    error_message=None if error_message is None else str(error_message),
                    details=item.get("details"),
                    raw=item,
                )
            )
        runs.append(
            ScenarioRun(
                scenario=scenario,
                directory=directory,
                checks=tuple(checks),
                client_stdout=_read_text(directory / "stdout.txt"),
                client_stderr=_read_text(directory / "stderr.txt"),
            )
        )
    return runs, errors


# ------------------------------------------------------------------ running


def run_conformance(
    version: str,
    args: Sequence[str],
    *,
    timeout: float = 120,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Result:
    """Run ``node ENTRY ARGS...`` and capture its output (no output directory parsing)."""
    argv = [str(node_binary()), str(conformance_entry(version)), *args]
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=full_env,
        cwd=cwd or REPO_ROOT,
        start_new_session=True,  # so a timeout can kill the suite and the client it spawned
    )
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
    return Result(
        args=argv,
        returncode=proc.returncode,
        stdout=_ANSI.sub("", stdout),
        stderr=_ANSI.sub("", stderr),
        timed_out=timed_out,
        label=f"conformance {version} {' '.join(args[:1])}".rstrip(),
    )


def _run_with_output(
    version: str,
    mode: str,
    args: list[str],
    label: str,
    timeout: float,
    output_dir: Path | None,
    env: Mapping[str, str] | None,
) -> Result:
    if output_dir is None:
        output_dir = Path(tempfile.mkdtemp(prefix=f"elicitkit-conformance-{mode}-"))
    else:
        output_dir.mkdir(parents=True, exist_ok=True)
    result = run_conformance(version, [mode, *args, "-o", str(output_dir)], timeout=timeout, env=env)
    result.label = label
    result.output_dir = output_dir
    result.scenarios, result.parse_errors = parse_output_dir(output_dir, mode)
    if not result.scenarios and result.returncode == 0:
        for line in result.stdout.splitlines() + result.stderr.splitlines():
            if line.startswith("SKIPPED:"):
                result.skipped = line[len("SKIPPED:") :].strip()
                break
    return result


def run_client_scenario(
    version: str,
    scenario: str,
    command: str | Sequence[str],
    spec_version: str | None = None,
    timeout: float = 120,
    *,
    output_dir: Path | None = None,
    client_timeout_ms: int | None = None,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Result:
    """Test a client: ``node ENTRY client --command CMD --scenario SCENARIO [--spec-version V] -o DIR``.

    The suite starts a test server and runs ``command`` through a shell with the server's URL
    appended as the last argument; ``MCP_CONFORMANCE_SCENARIO`` holds the scenario name and,
    with 0.2.x and ``spec_version``, ``MCP_CONFORMANCE_PROTOCOL_VERSION`` the protocol version.
    ``command`` may be a shell string or an argv list (quoted with shlex).  ``timeout`` (seconds)
    bounds the whole suite run; ``client_timeout_ms`` is the suite's own ``--timeout`` for the
    client process (its default is 30000).  ``output_dir`` defaults to a fresh temp directory.
    """
    cmd = command if isinstance(command, str) else shlex.join(command)
    args = ["--command", cmd, "--scenario", scenario]
    if spec_version is not None:
        args += ["--spec-version", spec_version]
    if client_timeout_ms is not None:
        args += ["--timeout", str(client_timeout_ms)]
    args += list(extra_args)
    label = f"conformance {version} client scenario {scenario!r}" + (f" at spec {spec_version}" if spec_version else "")
    return _run_with_output(version, "client", args, label, timeout, output_dir, env)


def run_client_suite(
    version: str,
    suite: str,
    command: str | Sequence[str],
    spec_version: str | None = None,
    timeout: float = 600,
    *,
    output_dir: Path | None = None,
    client_timeout_ms: int | None = None,
    env: Mapping[str, str] | None = None,
) -> Result:
    """Test a client on a whole suite at once: ``node ENTRY client --command CMD --suite SUITE ...``.

    The suite runs its scenarios in parallel (one client process each), so a leg costs about
    its slowest scenario; one ``ScenarioRun`` per scenario it ran.
    """
    cmd = command if isinstance(command, str) else shlex.join(command)
    args = ["--command", cmd, "--suite", suite]
    if spec_version is not None:
        args += ["--spec-version", spec_version]
    if client_timeout_ms is not None:
        args += ["--timeout", str(client_timeout_ms)]
    label = f"conformance {version} client suite {suite!r}" + (f" at spec {spec_version}" if spec_version else "")
    return _run_with_output(version, "client", args, label, timeout, output_dir, env)


def run_server_suite(
    version: str,
    url: str,
    extra_args: Sequence[str] = (),
    *,
    timeout: float = 300,
    output_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Result:
    """Test a running server: ``node ENTRY server --url URL EXTRA_ARGS... -o DIR``.

    ``extra_args`` passes e.g. ``["--scenario", "server-initialize"]``, ``["--suite", "all"]``,
    ``["--spec-version", "2025-11-25"]`` or (0.2.x) ``["--requirements", "2026-07-28"]``.
    One ``ScenarioRun`` per scenario the suite ran.
    """
    label = f"conformance {version} server suite against {url}"
    if extra_args:
        label += " " + " ".join(extra_args)
    return _run_with_output(version, "server", ["--url", url, *extra_args], label, timeout, output_dir, env)
