"""Our everything-server under the official conformance suite's server mode, one test per leg.

The module starts ``python -m elicitkit.testing.everything`` once on a free port and runs each
leg (a suite version plus arguments) against it. Every scenario must pass (no FAILURE check)
except the ones ``expected_failures.toml`` lists for that leg; a listed scenario that passes, or
that no longer runs, fails the test too, so that file can only shrink.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .harness import LATEST, REPO_ROOT, STABLE, Result, run_server_suite

EXPECTED_FAILURES = Path(__file__).with_name("expected_failures.toml")
STARTUP_TIMEOUT = 30.0  # seconds for the server to accept TCP connections
SUITE_TIMEOUT = 600.0  # seconds for one whole leg


@dataclass(frozen=True)
class Leg:
    """One run of the suite: which version, with which arguments, and what it must at least run."""

    name: str  # the table in expected_failures.toml
    version: str
    args: tuple[str, ...]
    must_run: frozenset[str]  # guards against a leg silently running fewer scenarios


LEGS = [
    Leg(
        "alpha12_2026_07_28",
        LATEST,
        ("--suite", "all", "--spec-version", "2026-07-28"),
        frozenset(
            {
                "server-stateless",
                "caching",
                "http-header-validation",
                "http-custom-header-server-validation",
                "sep-2164-resource-not-found",
                "dns-rebinding-protection",
                "input-required-result-basic-elicitation",
                "input-required-result-basic-sampling",
                "input-required-result-basic-list-roots",
                "input-required-result-request-state",
                "input-required-result-multiple-input-requests",
                "input-required-result-multi-round",
                "input-required-result-missing-input-response",
                "input-required-result-non-tool-request",
                "input-required-result-result-type",
                "input-required-result-unsupported-methods",
                "input-required-result-tampered-state",
                "input-required-result-capability-check",
                "input-required-result-ignore-extra-params",
                "input-required-result-validate-input",
            }
        ),
    ),
    Leg(
        # The bare run (no --spec-version): every scenario, extension ones (Tasks) included.
        "alpha12_all",
        LATEST,
        ("--suite", "all"),
        frozenset(
            {
                "server-stateless",
                "tasks-lifecycle",
                "tasks-capability-negotiation",
                "tasks-wire-fields",
                "tasks-request-state-removal",
                "tasks-mrtr-input",
                "tasks-request-headers",
                "tasks-dispatch-and-envelope",
                "tasks-required-task-error",
                "tasks-mrtr-composition",
                "input-required-result-basic-elicitation",
                "http-header-validation",
            }
        ),
    ),
    Leg(
        "alpha12_2025_11_25",
        LATEST,
        ("--suite", "all", "--spec-version", "2025-11-25"),
        frozenset(
            {
                "server-initialize",
                "tools-call-elicitation",
                "elicitation-sep1034-defaults",
                "elicitation-sep1330-enums",
                "server-sse-polling",
                "json-schema-2020-12",
                "dns-rebinding-protection",
            }
        ),
    ),
    Leg(
        "stable_0_1_16",
        STABLE,
        (),
        frozenset(
            {
                "server-initialize",
                "tools-call-elicitation",
                "elicitation-sep1034-defaults",
                "elicitation-sep1330-enums",
                "dns-rebinding-protection",
            }
        ),
    ),
]


def load_expected_failures(path: Path = EXPECTED_FAILURES) -> dict[str, frozenset[str]]:
    """``{leg name: scenarios expected to fail}``; a malformed file raises ValueError."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    known = {leg.name for leg in LEGS}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"{path.name}: unknown leg(s) {sorted(unknown)}; known: {sorted(known)}")
    out: dict[str, frozenset[str]] = {}
    for name in known:
        table = data.get(name, {})
        if not isinstance(table, dict) or set(table) - {"scenarios"}:
            raise ValueError(f"{path.name}: [{name}] may only hold `scenarios = [...]`")
        scenarios = table.get("scenarios", [])
        if not isinstance(scenarios, list) or not all(isinstance(s, str) for s in scenarios):
            raise ValueError(f"{path.name}: [{name}].scenarios must be a list of scenario names")
        if len(set(scenarios)) != len(scenarios):
            raise ValueError(f"{path.name}: [{name}].scenarios lists a scenario twice")
        out[name] = frozenset(scenarios)
    return out


# ----------------------------------------------------------------------------- the server


@dataclass(frozen=True)
class RunningServer:
    url: str
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return f"(no server log: {exc})"
        return "\n".join(f"  | {line}" for line in text.splitlines()[-lines:]) or "  | (empty)"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_listening(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            output = log.read_text(encoding="utf-8", errors="replace")
            raise RuntimeError(f"the everything-server exited with code {proc.returncode}:\n{output}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the everything-server did not accept connections on port {port} in {STARTUP_TIMEOUT:g}s")


@pytest.fixture(scope="module")
def everything_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """``python -m elicitkit.testing.everything`` on a free port, terminated after the module."""
    port = _free_port()
    log = tmp_path_factory.mktemp("everything-server") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "elicitkit.testing.everything", "--host", "127.0.0.1", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO_ROOT,
        )
    try:
        _wait_until_listening(proc, port, log)
        # 127.0.0.1 rather than localhost: node may resolve localhost to ::1, where nothing listens.
        yield RunningServer(f"http://127.0.0.1:{port}/mcp", log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ----------------------------------------------------------------------------- the legs


def scenario_table(result: Result) -> str:
    """One line per scenario: verdict and check counts."""
    lines = []
    for run in sorted(result.scenarios, key=lambda r: r.scenario):
        counts = {s: sum(c.status == s for c in run.checks) for s in ("SUCCESS", "FAILURE", "WARNING")}
        mark = "FAIL" if counts["FAILURE"] else "ok  "
        lines.append(
            f"  {mark} {run.scenario}: {counts['SUCCESS']} passed, {counts['FAILURE']} failed,"
            f" {counts['WARNING']} warnings"
        )
    return "\n".join(lines)


def leg_problems(result: Result, leg: Leg, expected: frozenset[str]) -> list[str]:
    """Everything wrong with a leg's outcome, given the failures it is allowed."""
    problems: list[str] = []
    if result.timed_out:
        problems.append("the suite timed out and was killed")
    if result.skipped is not None:
        problems.append(f"the suite skipped the run: {result.skipped}")
    problems.extend(f"unreadable output: {err}" for err in result.parse_errors)
    ran = {run.scenario for run in result.scenarios}
    failed = {run.scenario for run in result.scenarios if any(c.failed for c in run.checks)}
    if not ran:
        problems.append("the suite ran no scenario (no checks.json written)")
    if result.returncode != 0 and not failed and not result.timed_out:
        problems.append(f"the suite exited with code {result.returncode} without any failing check")
    for scenario in sorted(failed - expected):
        problems.append(f"{scenario}: FAILED (not in expected_failures.toml [{leg.name}])")
    for scenario in sorted((expected & ran) - failed):
        problems.append(f"{scenario}: passes now; remove it from expected_failures.toml [{leg.name}]")
    if ran:
        for scenario in sorted(expected - ran):
            problems.append(f"{scenario}: listed in expected_failures.toml [{leg.name}] but did not run")
    for scenario in sorted(leg.must_run - ran):
        problems.append(f"{scenario}: expected this leg to run it, but it did not")
    return problems


@pytest.mark.conformance
@pytest.mark.timeout(int(SUITE_TIMEOUT) + 120)
@pytest.mark.parametrize("leg", LEGS, ids=[leg.name for leg in LEGS])
def test_server_leg(leg: Leg, everything_server: RunningServer, tmp_path: Path) -> None:
    expected = load_expected_failures()[leg.name]
    result = run_server_suite(
        leg.version, everything_server.url, leg.args, timeout=SUITE_TIMEOUT, output_dir=tmp_path / "results"
    )
    problems = leg_problems(result, leg, expected)
    if problems:
        pytest.fail(
            f"leg {leg.name} ({leg.version} {' '.join(leg.args) or '(default suite)'}):\n"
            + "\n".join(f"  - {p}" for p in problems)
            + f"\n\nscenarios:\n{scenario_table(result)}\n\n{result.summary()}"
            + f"\n\neverything-server log (last lines):\n{everything_server.log_tail()}",
            pytrace=False,
        )


def test_expected_failures_file_is_well_formed() -> None:
    legs = load_expected_failures()
    assert set(legs) == {leg.name for leg in LEGS}
