"""Our client under the official conformance suite, scenario by scenario, on both pinned versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import LATEST, STABLE, python_command, run_client_scenario

CLIENT = python_command("-m", "elicitkit.testing.conformance_client")

# (suite version, scenario, spec version or None for the scenario's default)
CASES = [
    (LATEST, "initialize", None),
    (LATEST, "tools_call", None),
    (LATEST, "sse-retry", None),
    (LATEST, "json-schema-2020-12-preservation", None),
    (LATEST, "elicitation-sep1034-client-defaults", None),
    (STABLE, "initialize", None),
    (STABLE, "tools_call", None),
    (STABLE, "sse-retry", None),
    (STABLE, "elicitation-sep1034-client-defaults", None),
]


@pytest.mark.conformance
@pytest.mark.parametrize(("version", "scenario", "spec_version"), CASES, ids=[f"{v}-{s}" for v, s, _ in CASES])
def test_client_scenario(version: str, scenario: str, spec_version: str | None, tmp_path: Path) -> None:
    result = run_client_scenario(version, scenario, CLIENT, spec_version=spec_version, output_dir=tmp_path)
    assert result.ok, result.summary()
    assert not result.warnings(), result.summary()
