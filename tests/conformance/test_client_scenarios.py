"""Our client under the official conformance suite, scenario by scenario: what no leg runs.

Every client scenario of both pinned versions runs in a leg of test_client_auth.py (a whole
suite at once, at the same spec version a run by name would use), except 0.1.16's
``sse-retry``: it times the client's reconnect, so it runs here alone (no other client process of ours runs meanwhile).
test_client_auth.py checks that legs and these runs cover each scenario exactly once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import STABLE, python_command, run_client_scenario

CLIENT = python_command("-m", "elicitkit.testing.conformance_client")

# (suite version, scenario, spec version or None for the scenario's default)
CASES = [
    (STABLE, "sse-retry", None),
]


@pytest.mark.conformance
@pytest.mark.parametrize(
    ("version", "scenario", "spec_version"), CASES, ids=[f"{v}-{s}" + (f"-{sv}" if sv else "") for v, s, sv in CASES]
)
def test_client_scenario(version: str, scenario: str, spec_version: str | None, tmp_path: Path) -> None:
    result = run_client_scenario(version, scenario, CLIENT, spec_version=spec_version, output_dir=tmp_path)
    assert result.ok, result.summary()
    assert not result.warnings(), result.summary()
