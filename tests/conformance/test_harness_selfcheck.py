"""Self-checks of the conformance tooling: node 22 and both suite versions are installed and run,
and harness.py reads the suite's output the way the real tests rely on."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .harness import (
    CONFORMANCE_VERSIONS,
    NODE_MAJOR,
    conformance_entry,
    node_binary,
    parse_output_dir,
    run_client_scenario,
    run_conformance,
)

pytestmark = pytest.mark.conformance


def test_cached_node_is_v22() -> None:
    out = subprocess.run([str(node_binary()), "--version"], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip().startswith(f"v{NODE_MAJOR}."), out.stdout


@pytest.mark.parametrize("version", CONFORMANCE_VERSIONS)
def test_suite_reports_its_version(version: str) -> None:
    result = run_conformance(version, ["--version"], timeout=60)
    assert result.returncode == 0, result.summary()
    assert result.stdout.strip() == version


@pytest.mark.parametrize("version", CONFORMANCE_VERSIONS)
def test_list_mentions_core_scenarios(version: str) -> None:
    result = run_conformance(version, ["list"], timeout=60)
    assert result.returncode == 0, result.summary()
    listed = {line.strip()[2:].split(" ")[0] for line in result.stdout.splitlines() if line.strip()[:2] == "- "}
    for scenario in ("initialize", "tools_call"):
        assert scenario in listed, f"{scenario!r} missing from `list` of {version}:\n{result.stdout}"


def test_missing_cache_raises_with_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ELICITKIT_CACHE", str(tmp_path / "nowhere"))
    with pytest.raises(RuntimeError, match=r"scripts/bootstrap\.sh"):
        node_binary()
    with pytest.raises(RuntimeError, match=r"scripts/bootstrap\.sh"):
        conformance_entry(CONFORMANCE_VERSIONS[0])


def test_parser_reports_failed_checks(tmp_path: Path) -> None:
    run_dir = tmp_path / "server-tools-call-error-2026-01-02T03-04-05-678Z"
    run_dir.mkdir()
    checks = [
        {
            "id": "tool-error",
            "name": "ToolError",
            "description": "d1",
            "status": "FAILURE",
            "timestamp": "t",
            "errorMessage": "boom",
        },
        {
            "id": "wire-schema-valid",
            "name": "WireSchemaValid",
            "description": "d2",
            "status": "SUCCESS",
            "timestamp": "t",
        },
        {
            "id": "slow",
            "name": "Slow",
            "description": "d3",
            "status": "WARNING",
            "timestamp": "t",
            "details": {"message": "took long", "ms": 5},
        },
    ]
    (run_dir / "checks.json").write_text(json.dumps(checks))
    nested = tmp_path / "auth" / "metadata-default-2026-01-02T03-04-05-679Z"
    nested.mkdir(parents=True)
    (nested / "checks.json").write_text("[]")
    runs, errors = parse_output_dir(tmp_path, "server")
    assert errors == []
    assert sorted(r.scenario for r in runs) == ["auth/metadata-default", "tools-call-error"]
    by_name = {r.scenario: r for r in runs}
    assert [c.status for c in by_name["tools-call-error"].checks] == ["FAILURE", "SUCCESS", "WARNING"]
    assert "boom" in by_name["tools-call-error"].checks[0].describe()
    assert "took long" in by_name["tools-call-error"].checks[2].describe()


def test_client_that_does_nothing_is_not_ok(tmp_path: Path) -> None:
    # The suite itself says "OVERALL: PASSED" (0/0 checks, exit 0) for a client that never
    # connects; the harness must not.
    result = run_client_scenario(CONFORMANCE_VERSIONS[0], "initialize", "true", output_dir=tmp_path, timeout=60)
    assert result.returncode == 0, result.summary()
    assert not result.ok
    assert "no check passed or failed" in result.summary()
