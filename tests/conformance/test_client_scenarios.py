"""Our client under the official conformance suite, scenario by scenario, on both pinned versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import LATEST, STABLE, python_command, run_client_scenario

MODERN = "2026-07-28"
CLIENT = python_command("-m", "elicitkit.testing.conformance_client")

# (suite version, scenario, spec version or None for the scenario's default)
CASES = [
    (LATEST, "initialize", None),
    (LATEST, "tools_call", None),
    (LATEST, "sse-retry", None),
    (LATEST, "json-schema-2020-12-preservation", None),
    (LATEST, "elicitation-sep1034-client-defaults", None),
    (LATEST, "tools_call", MODERN),
    (LATEST, "json-schema-2020-12-preservation", MODERN),
    (LATEST, "request-metadata", MODERN),
    (LATEST, "sep-2322-client-request-state", MODERN),
    (LATEST, "http-standard-headers", MODERN),
    (LATEST, "http-custom-headers", MODERN),
    (LATEST, "http-invalid-tool-headers", MODERN),
    (LATEST, "json-schema-ref-no-deref", MODERN),
    (STABLE, "initialize", None),
    (STABLE, "tools_call", None),
    (STABLE, "sse-retry", None),
    (STABLE, "elicitation-sep1034-client-defaults", None),
]


@pytest.mark.conformance
@pytest.mark.parametrize(
    ("version", "scenario", "spec_version"), CASES, ids=[f"{v}-{s}" + (f"-{sv}" if sv else "") for v, s, sv in CASES]
)
def test_client_scenario(version: str, scenario: str, spec_version: str | None, tmp_path: Path) -> None:
    result = run_client_scenario(version, scenario, CLIENT, spec_version=spec_version, output_dir=tmp_path)
    assert result.ok, result.summary()
    assert not result.warnings(), result.summary()
